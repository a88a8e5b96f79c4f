"""`minibert train-tokenizer`: learn a WordPiece vocabulary from text files, save it as Hugging Face does."""

from __future__ import annotations

from pathlib import Path

# What a tokenizer folder holds (this command writes the first two; Hugging Face's fast tokenizer the third).
TOKENIZER_FILES = ("vocab.txt", "tokenizer_config.json", "tokenizer.json")


def add_arguments(parser):
    parser.description = (
        "Learn a WordPiece vocabulary (special tokens, characters, then merged pieces chosen by the WordPiece "
        "score count(ab) / (count(a) count(b))) from UTF-8 text files, and write vocab.txt and "
        "tokenizer_config.json to --out. The folder loads in minibert and in Hugging Face's "
        "BertTokenizerFast.from_pretrained.")
    parser.add_argument("--corpus", nargs="+", required=True, metavar="FILE_OR_DIR",
                        help="UTF-8 text files, or folders (every file inside, recursively)")
    parser.add_argument("--vocab-size", type=int, default=8192, help="tokens in the vocabulary (default: 8192)")
    parser.add_argument("--out", required=True, metavar="DIR", help="folder to write the tokenizer to")
    parser.add_argument("--min-frequency", type=int, default=2,
                        help="never merge a pair seen fewer times (default: 2)")
    parser.add_argument("--limit-alphabet", type=int, default=None, metavar="N",
                        help="keep only the N most frequent characters (default: all)")
    parser.add_argument("--cased", action="store_true",
                        help="keep upper case and accents (do_lower_case=False); default: lowercase")
    parser.add_argument("--model-max-length", type=int, default=512,
                        help="longest input the model will take, saved in tokenizer_config.json (default: 512)")
    parser.add_argument("--score", choices=("wordpiece", "frequency"), default="wordpiece",
                        help="merge rule: 'wordpiece' = best count(ab)/(count(a) count(b)) (default); 'frequency' = "
                             "most frequent pair (BPE's rule; better whole words for small vocabularies)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace the tokenizer files already in --out (default: refuse, since a model in that "
                             "folder would no longer match its vocabulary)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")


def run(args) -> int:
    from minibert.tokenizer import train_wordpiece
    from minibert.tokenizer.vocab_io import corpus_files

    if args.vocab_size < 6:
        raise ValueError(f"--vocab-size must be at least 6 (5 special tokens and a character), got {args.vocab_size}")
    if args.min_frequency < 1:
        raise ValueError(f"--min-frequency must be at least 1, got {args.min_frequency}")
    if args.limit_alphabet is not None and args.limit_alphabet < 1:
        raise ValueError(f"--limit-alphabet must be at least 1, got {args.limit_alphabet}")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} exists and is not a folder")
    held = [name for name in TOKENIZER_FILES if (out / name).exists()]
    if held and not args.overwrite:  # a model's folder: a new vocabulary would silently no longer fit its weights
        raise FileExistsError(f"--out {out} already holds {', '.join(held)}; choose another folder, or add "
                              f"--overwrite to replace {'it' if len(held) == 1 else 'them'}")
    files = corpus_files(args.corpus)  # every file must exist before the long work starts
    tok = train_wordpiece(files, vocab_size=args.vocab_size, min_frequency=args.min_frequency, score=args.score,
                          limit_alphabet=args.limit_alphabet, do_lower_case=not args.cased,
                          model_max_length=args.model_max_length, progress=not args.no_progress)
    tok.save_pretrained(out)
    # An older fast tokenizer's tokenizer.json would be what Hugging Face loads first: it must go with the rest.
    (out / "tokenizer.json").unlink(missing_ok=True)
    note = "" if tok.vocab_size == args.vocab_size else (
        f" (fewer than {args.vocab_size}: no pair left that appears --min-frequency={args.min_frequency} times)")
    print(f"trained a vocabulary of {tok.vocab_size} tokens{note} on {len(files)} file(s); "
          f"wrote {out / 'vocab.txt'} and {out / 'tokenizer_config.json'}")
    return 0
