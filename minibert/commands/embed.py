"""`minibert embed`: sentence embeddings (mean pooling over the attention mask, L2-normalised by default).

    minibert embed "A cat sat on the mat." "A dog ran."          JSON on stdout
    minibert embed --input sentences.txt --out emb.npy          one text per line -> one row per line
    minibert embed --model runs/my-bert "some text"             any BERT checkpoint folder with vocab.txt
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np


def add_arguments(parser):
    parser.add_argument("texts", nargs="*", metavar="TEXT", help="texts to embed (or use --input)")
    parser.add_argument("--model", default="minilm",
                        help="checkpoint folder (config.json, model.safetensors, vocab.txt), a pre-training run "
                             "folder (its latest checkpoint), or 'minilm' for the built-in all-MiniLM-L6-v2 (default)")
    parser.add_argument("--input", metavar="FILE",
                        help="text file with one text per line ('-' for standard input); every line gives a row")
    parser.add_argument("--out", metavar="FILE.npy",
                        help="save the embeddings as a NumPy .npy array (N, H) instead of printing JSON")
    parser.add_argument("--batch-size", type=int, default=32, help="texts per forward pass (default 32)")
    parser.add_argument("--workers", type=int, default=None,
                        help="batches run at once, each on its own thread and core (default: the cores, at most 4; "
                             "1 when OPENBLAS_NUM_THREADS=1); each holds its own activations, so memory grows with it")
    parser.add_argument("--max-length", type=int, default=None,
                        help="truncate texts to this many tokens (default: the model's, 256 for MiniLM)")
    parser.add_argument("--no-normalize", dest="normalize", action="store_false",
                        help="keep the raw mean-pooled vectors (default: scale each to length 1)")
    parser.add_argument("--decimals", type=int, default=6, help="digits after the point in JSON (default 6)")


def read_texts(args) -> list[str]:
    if args.input and args.texts:
        raise ValueError("give texts on the command line or --input FILE, not both")
    if args.input:
        if args.input == "-":
            lines = sys.stdin.read().splitlines()
        else:
            from minibert.io.atomic import read_text_file
            lines = read_text_file(args.input, "--input").splitlines()
        if not lines:
            raise ValueError(f"--input {args.input}: " + ("standard input" if args.input == "-" else "the file") +
                             " is empty: nothing to embed (every line, empty lines too, gives a row)")
        return lines
    if not args.texts:
        raise ValueError("nothing to embed: give one or more texts, or --input FILE")
    return list(args.texts)


def truncation_note(limit: int, lengths: list[int], names=None) -> str | None:
    """A note for the texts longer than the encoder reads (cut to its max_length, `limit`), or None. lengths:
    the texts' token counts before the cut (SentenceEncoder.tokenize_with_lengths)."""
    long = [i for i, n in enumerate(lengths) if n > limit]
    if not long:
        return None
    if names is not None:
        which = " and ".join(f"{names[i]} has {lengths[i]:,} tokens" for i in long)
        return (f"note: {which}, more than the model reads ({limit}, --max-length): only the first {limit} "
                f"count")
    return (f"note: {len(long)} of {len(lengths)} texts {'is' if len(long) == 1 else 'are'} longer than the model "
            f"reads ({limit} tokens, --max-length; the longest has {max(lengths):,}): only the first {limit} count")


def checked_model_folder(args) -> Path:
    """The folder --model names (errors name --model), with --max-length checked against its config.json, before
    the weights load (embed and similarity)."""
    from minibert.io.model_folder import resolve_model_folder
    folder = resolve_model_folder(args.model, "--model")
    if args.max_length is not None:
        from minibert.commands.finetune_setup import checked_max_length
        from minibert.config import BertConfig
        checked_max_length(args, BertConfig.from_json_file(folder / "config.json"), default=args.max_length,
                           minimum=2)
    return folder


def run(args) -> int:
    from minibert.embeddings import SentenceEncoder
    from minibert.io.atomic import atomic_path, check_output_file

    # Check everything cheap before the model loads.
    if args.batch_size < 1:
        raise ValueError(f"--batch-size must be at least 1, got {args.batch_size}")
    if args.workers is not None and args.workers < 1:
        raise ValueError(f"--workers must be at least 1, got {args.workers}")
    if args.decimals < 0:
        raise ValueError(f"--decimals must be at least 0, got {args.decimals}")
    if args.out:
        if Path(args.out).suffix != ".npy":
            raise ValueError(f"--out {args.out}: expected a file name ending in .npy")
        check_output_file(args.out, "--out", {"--input": args.input})
    texts = read_texts(args)
    folder = checked_model_folder(args)
    encoder = SentenceEncoder.from_pretrained(folder, max_length=args.max_length, normalize=args.normalize)
    token_ids, lengths = encoder.tokenize_with_lengths(texts)  # once: for the note and for the model
    note = truncation_note(encoder.max_length, lengths)
    if note:
        print(note, file=sys.stderr)
    embeddings = encoder.encode_token_ids(token_ids, batch_size=args.batch_size,
                                          progress=len(texts) > 4 * args.batch_size, workers=args.workers)

    if args.out:
        with atomic_path(args.out) as tmp:
            with open(tmp, "wb") as f:
                np.save(f, embeddings, allow_pickle=False)
        n = embeddings.shape[0]
        print(f"wrote {n} embedding{'s' if n != 1 else ''} of dimension {embeddings.shape[1]} to {args.out}",
              file=sys.stderr)
        return 0
    result = {
        "model": str(encoder.name_or_path),
        "dimension": encoder.dimension,
        "normalized": args.normalize,
        "embeddings": [{"text": t, "embedding": [round(float(x), args.decimals) for x in e]}
                       for t, e in zip(texts, embeddings)],
    }
    print(json.dumps(result, ensure_ascii=False))
    return 0
