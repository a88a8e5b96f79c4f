"""`minibert fill-mask`: the model's top guesses for each [MASK] in a sentence."""

from __future__ import annotations

import json


def add_arguments(parser) -> None:
    parser.description = ("Show a masked-language model's top guesses for every [MASK] in a text, with their "
                          "probabilities. --model takes a pre-training run folder (its latest checkpoint) or any "
                          "BERT folder with config.json, model.safetensors and vocab.txt.")
    parser.epilog = ('Example:  minibert fill-mask --model runs/mini-wiki-20250101-120000 '
                     '"paris is the capital of [MASK]."')
    parser.add_argument("text", nargs="+", help="text(s) with one or more [MASK]")
    parser.add_argument("--model", required=True, metavar="DIR", help="run folder or model folder")
    parser.add_argument("--top-k", type=int, default=5, help="guesses per [MASK] (default: 5)")
    parser.add_argument("--json", action="store_true",
                        help='print JSON: a list per [MASK] of {"token_str", "score", "token", "sequence"}; with '
                             'several texts, one such list per text')


def run(args) -> int:
    from minibert.fill_mask import FillMask
    if args.top_k < 1:
        raise ValueError(f"--top-k must be at least 1, got {args.top_k}")
    from minibert.commands.tokenize import check_argument_text
    for i, text in enumerate(args.text, 1):  # (before the model is loaded)
        check_argument_text(text, f"text {i}")
    filler = FillMask.from_pretrained(args.model, option="--model")
    encoded = []
    for i, text in enumerate(args.text, 1):  # every text, before the first one's guesses are shown
        try:
            encoded.append(filler.encode(text))
        except ValueError as e:
            raise ValueError(f"text {i} ({quoted(text)}): {e}") from None
    # (never special tokens, even for a large K)
    results = [filler.fill_encoded(ids_and_masks, top_k=args.top_k) for ids_and_masks in encoded]
    if args.json:
        print(json.dumps(results[0] if len(results) == 1 else results, indent=2, ensure_ascii=False))
        return 0
    for text, per_mask in zip(args.text, results):
        print(text)
        for i, guesses in enumerate(per_mask):
            if len(per_mask) > 1:
                print(f"  [MASK] #{i + 1}")
            for g in guesses:
                print(f"  {g['score']:7.2%}  {g['token_str']:<16} {g['sequence']}")
    return 0


def quoted(text: str, limit: int = 40) -> str:
    """The first `limit` characters of `text`, quoted on one line (JSON's escapes for line breaks)."""
    return json.dumps(text if len(text) <= limit else text[:limit] + "…", ensure_ascii=False)
