"""`minibert attention`: which token attends to which, drawn from a real model (PNG heatmaps or an HTML view)."""

from __future__ import annotations

import sys
from pathlib import Path


def add_arguments(parser):
    parser.description = (
        "Run a model on a text and draw its attention: with --out, PNG heatmaps (one head with --layer and "
        "--head, else a grid of layers x heads; rows = the token that attends, columns = the tokens it attends "
        "to); with --html, one self-contained interactive page (no network) where you pick the layer and head "
        "and hover a token to see where it looks. Layers and heads are numbered from 0. PNGs need matplotlib "
        "(pip install 'minibert[plot]'); the HTML page does not.")
    parser.add_argument("text", help="the sentence to look at (in quotes)")
    parser.add_argument("--pair", default=None, metavar="TEXT", help="a second sentence (segment B), as for NSP")
    parser.add_argument("--model", required=True, metavar="DIR",
                        help="a model folder (config.json + model.safetensors + vocab.txt), a pre-training run "
                             "folder (its latest checkpoint), or 'minilm' (the built-in all-MiniLM-L6-v2)")
    parser.add_argument("--tokenizer", default=None, metavar="DIR",
                        help="tokenizer folder, run folder or 'minilm' (default: the model's own)")
    parser.add_argument("--layer", type=int, default=None, help="only this layer (default: all)")
    parser.add_argument("--head", type=int, default=None, help="only this head (default: all)")
    parser.add_argument("--out", default=None, help="PNG to write (default attention.png when --html is not given)")
    parser.add_argument("--html", default=None, help="write the interactive page here (e.g. attention.html)")


def run(args) -> int:
    out = Path(args.out) if args.out else (None if args.html else Path("attention.png"))
    html_out = Path(args.html) if args.html else None
    if out is not None and out.suffix.lower() != ".png":
        raise ValueError(f"--out {out}: expected a .png file name")
    if html_out is not None and html_out.suffix.lower() not in (".html", ".htm"):
        raise ValueError(f"--html {html_out}: expected a .html file name")
    from minibert.io.atomic import atomic_write_text, check_output_file
    for option, path in (("--out", out), ("--html", html_out)):
        if path is not None:
            check_output_file(path, option)
    from minibert.viz.attention_data import check_texts
    check_texts(args.text, args.pair)
    from minibert.viz.model_select import resolve_model_folder, resolve_tokenizer_folder
    model_dir = resolve_model_folder(args.model)
    tokenizer_dir = resolve_tokenizer_folder(args.tokenizer) if args.tokenizer else None

    from minibert.config import BertConfig
    from minibert.viz.attention_data import (check_layer_head, compute_attention, encode_for_model, load_encoder,
                                             load_tokenizer)
    # Check --layer/--head against config.json before loading any weights.
    config = BertConfig.from_json_file(model_dir)
    check_layer_head(config, args.layer, args.head)
    if out is not None:
        from minibert.viz.mpl import require_matplotlib
        require_matplotlib()  # before the model loads; cli.main turns its ImportError into one line
    tokenizer = load_tokenizer(model_dir, tokenizer_dir)
    # (encoding, note), once: the page's size is checked on it before the model loads, and the model runs on it
    encoded = encode_for_model(tokenizer, config, args.text, args.pair)
    if html_out is not None:  # a text too long for one page: said before the model loads and runs
        from minibert.viz.attention_html import check_fits_page
        check_fits_page(len(encoded[0].input_ids), config.num_hidden_layers, config.num_attention_heads, encoded[1])
    model = load_encoder(model_dir)
    result = compute_attention(model, tokenizer, args.text, args.pair, encoded=encoded)
    if result.note:
        print(f"note: {result.note}", file=sys.stderr)
    shown = result.tokens if len(result.tokens) <= 40 else result.tokens[:20] + ["..."] + result.tokens[-10:]
    print(f"{len(result.tokens)} tokens: {' '.join(shown)}")
    print(f"{result.num_layers} layers x {result.num_heads} heads")
    page = None
    if html_out is not None:  # built before the PNG is written (its size was checked before the model ran)
        from minibert.viz.attention_html import attention_page
        page = attention_page(result, layer=args.layer or 0, head=args.head if args.head is not None else 0)

    if out is not None:
        from minibert.viz.attention_png import attention_summary, draw_attention_png
        layers = None if args.layer is None else [args.layer]
        heads = None if args.head is None else [args.head]
        draw_attention_png(result, out, layers, heads)
        if args.layer is not None and args.head is not None and len(result.tokens) <= 40:
            print(f"layer {args.layer}, head {args.head}: where each token looks most")
            print("\n".join(attention_summary(result, args.layer, args.head)))
        print(f"wrote {out}")
    if html_out is not None:
        atomic_write_text(html_out, page)
        print(f"wrote {html_out} (open it in a browser; it needs no network)")
    return 0
