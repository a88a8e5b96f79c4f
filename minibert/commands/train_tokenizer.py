"""`minibert train-tokenizer`: learn a WordPiece vocabulary from text files, save it as Hugging Face does."""

from __future__ import annotations

import os
from pathlib import Path

from minibert.tokenizer.trainer import SCORES

# What a tokenizer folder holds (what save_pretrained writes; an older minibert or another library may have left
# a tokenizer.json there).
TOKENIZER_FILES = ("vocab.txt", "tokenizer_config.json", "tokenizer.json")


def add_arguments(parser):
    parser.description = (
        "Learn a WordPiece vocabulary (special tokens, characters, then merged pieces: by default the most "
        "frequent pair, as Hugging Face's WordPieceTrainer does) from text files, and write the tokenizer's "
        "files (vocab.txt, tokenizer.json, tokenizer_config.json) to --out. The folder loads in minibert and in "
        "Hugging Face's BertTokenizerFast.from_pretrained.")
    parser.add_argument("--corpus", nargs="+", required=True, metavar="FILE_OR_DIR",
                        help="UTF-8 text files, .jsonl files (the --text-field of each record), .gz of either, or "
                             "folders (every file inside, recursively); the formats pretrain reads")
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
    parser.add_argument("--score", choices=SCORES, default="frequency",
                        help="merge rule: 'frequency' = the most frequent pair (default; BPE's rule, what Hugging "
                             "Face's WordPieceTrainer and minibert pretrain use: frequent words become whole "
                             "tokens, about 1.5 tokens per word on Wikipedia at 8192 tokens); 'wordpiece' = the "
                             "best count(ab)/(count(a) count(b)), which favours rare pairs: at 8192 tokens it spells "
                             "frequent words letter by letter ('paris' -> p ##a ##r ##i ##s), about 4 tokens per "
                             "word")
    parser.add_argument("--text-field", default="text", metavar="NAME",
                        help="the field of .jsonl records that holds the text (default: text)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace the tokenizer files already in --out (default: refuse, since a model in that "
                             "folder would no longer match its vocabulary)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")


def run(args) -> int:
    import warnings

    from minibert._plural import counted
    from minibert.io.atomic import check_folder_path, check_output_file
    from minibert.tokenizer import train_wordpiece
    from minibert.tokenizer.trainer import AlphabetTooLarge, SmallVocabularyWarning, shortfall, too_small_message
    from minibert.tokenizer.vocab_io import corpus_files
    from minibert.tokenizer.wordpiece import SPECIAL_TOKENS

    if args.vocab_size <= len(SPECIAL_TOKENS):
        raise ValueError(too_small_message(args.vocab_size, len(SPECIAL_TOKENS), cli=True))
    if args.min_frequency < 1:
        raise ValueError(f"--min-frequency must be at least 1, got {args.min_frequency}")
    if args.limit_alphabet is not None and args.limit_alphabet < 1:
        raise ValueError(f"--limit-alphabet must be at least 1, got {args.limit_alphabet}")
    # --out first, before the corpus is read: a file in the way, a folder that cannot be written
    out = Path(args.out)
    folder = check_folder_path(out, "--out")  # the nearest folder that exists
    if folder is not None and not os.access(folder, os.W_OK | os.X_OK):
        raise PermissionError(f"--out {out}: no permission to write in {folder}")
    for name in TOKENIZER_FILES:  # (a folder of that name in the way)
        check_output_file(out / name, "--out")
    held = [name for name in TOKENIZER_FILES if (out / name).exists()]
    if held and not args.overwrite:  # a model's folder: a new vocabulary would silently no longer fit its weights
        raise FileExistsError(f"--out {out} already holds {', '.join(held)}; choose another folder, or add "
                              f"--overwrite to replace {'it' if len(held) == 1 else 'them'}")
    files, repeated, own = select_files(corpus_files(args.corpus), out)  # all exist before the long work starts
    if not files:
        raise ValueError(f"--corpus: no file to train on: the files given are --out's own tokenizer files, which "
                         f"are not read (a second run into {out} would learn from the first)")
    try:
        with warnings.catch_warnings():  # (the line below says so, in the command's own terms)
            warnings.simplefilter("ignore", SmallVocabularyWarning)
            tok = train_wordpiece(files, vocab_size=args.vocab_size, min_frequency=args.min_frequency,
                                  score=args.score, limit_alphabet=args.limit_alphabet, do_lower_case=not args.cased,
                                  model_max_length=args.model_max_length, progress=not args.no_progress,
                                  text_field=args.text_field)
    except AlphabetTooLarge as e:  # the same message, in the command's options
        raise ValueError(e.message(cli=True)) from None
    tok.save_pretrained(out)  # (all of TOKENIZER_FILES, an older tokenizer.json replaced too)
    note = "" if tok.vocab_size == args.vocab_size else (
        f" ({shortfall(args.vocab_size, args.min_frequency, args.limit_alphabet, cli=True)})")
    left_out = [counted(repeated, "repeated file")] if repeated else []
    if own:
        left_out.append(f"{counted(own, 'tokenizer file')} of --out")
    left_out = f" (left out: {' and '.join(left_out)})" if left_out else ""
    print(f"trained a vocabulary of {counted(tok.vocab_size, 'token')}{note} on {counted(len(files), 'file')}"
          f"{left_out}; wrote {', '.join(TOKENIZER_FILES)} to {out}")
    return 0


def select_files(files: list[Path], out: Path) -> tuple[list[Path], int, int]:
    """(the files to read, how many were repeats, how many are --out's own tokenizer files).

    A file named twice (or found again in a folder, or through a link) is read once; the files this command
    writes in --out are not read at all, so a second run into the same folder does not learn from the first."""
    written = set()
    for name in TOKENIZER_FILES:
        try:
            written.add((out / name).resolve())
        except OSError:
            pass
    seen: set[Path] = set()
    kept, repeated, own = [], 0, 0
    for f in files:
        real = f.resolve()
        if real in seen:
            repeated += 1
            continue
        seen.add(real)
        if real in written:
            own += 1
            continue
        kept.append(f)
    return kept, repeated, own
