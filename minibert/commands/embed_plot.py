"""`minibert embed-plot`: token embeddings of chosen words projected to 2-D with PCA, as a labelled PNG."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

DEFAULT_WORDS = ["king", "queen", "man", "woman", "prince", "princess", "boy", "girl", "paris", "london",
                 "france", "england", "one", "two", "three", "red", "green", "blue"]


def add_arguments(parser):
    parser.description = (
        "Plot the input (word-piece) embeddings of some words in 2-D. Each word's vector is its row of the "
        "word-embedding matrix (the mean of its pieces' rows when WordPiece splits it); PCA (an SVD in NumPy) "
        "keeps the two directions along which the vectors differ most. Also prints each word's nearest "
        "neighbour by cosine similarity. Needs matplotlib (pip install 'minibert[plot]').")
    parser.add_argument("--model", required=True, metavar="DIR", help="a model folder (config.json, "
                        "model.safetensors, vocab.txt), a pre-training run folder, or 'minilm' (built in)")
    parser.add_argument("--tokenizer", default=None, metavar="DIR",
                        help="tokenizer folder, run folder or 'minilm' (default: the model's own)")
    parser.add_argument("--words", nargs="+", default=None,
                        help=f"the words to plot (default: {' '.join(DEFAULT_WORDS)})")
    parser.add_argument("--words-file", default=None, help="a text file with one word per line (or spaces)")
    parser.add_argument("--out", default="embeddings.png", help="PNG to write (default embeddings.png)")


def run(args) -> int:
    from minibert.io.atomic import check_output_file, read_text_file
    given = args.words is not None or args.words_file is not None
    words = [w.strip() for w in args.words or [] if w.strip()]  # a word may hold a space: "new york"
    if args.words_file:
        from_file = read_text_file(args.words_file, "--words-file").split()
        if not from_file:
            raise ValueError(f"--words-file {args.words_file}: no words in it (expected words separated by "
                             f"spaces or new lines)")
        words += from_file
    if given and not words:
        raise ValueError("--words: every word given is empty")
    words = words or DEFAULT_WORDS
    out = Path(args.out)
    if out.suffix.lower() != ".png":
        raise ValueError(f"--out {out}: expected a .png file name")
    check_output_file(out, "--out")
    from minibert.viz.model_select import resolve_model_folder, resolve_tokenizer_folder
    model_dir = resolve_model_folder(args.model)
    tokenizer_dir = resolve_tokenizer_folder(args.tokenizer) if args.tokenizer else model_dir

    from minibert.io.checkpoint import CheckpointWarning
    from minibert.models.auto import load_body
    from minibert.tokenizer import WordPieceTokenizer
    from minibert.viz.embed_plot import cosine_neighbours, pca_2d, plot_embeddings, word_vectors
    from minibert.viz.model_select import model_label
    tokenizer = WordPieceTokenizer.from_pretrained(tokenizer_dir)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*not used by.*", category=CheckpointWarning)
        model = load_body(model_dir, add_pooling_layer=False)  # BERT or DistilBERT
    embeddings = model.params["embeddings.word_embeddings.weight"]  # (V, H)
    if tokenizer.vocab_size != embeddings.shape[0]:
        raise ValueError(f"the tokenizer has {tokenizer.vocab_size} tokens but the model's word embeddings have "
                         f"{embeddings.shape[0]} rows: they do not belong together")
    wv = word_vectors(embeddings, tokenizer, words)
    if wv.unknown:
        print(f"left out (unknown to the vocabulary, only [UNK]): {', '.join(wv.unknown)}", file=sys.stderr)
    if wv.same_as:
        print("left out (the same pieces, so the same point, as a word before): " +
              ", ".join(f"{w} (= {kept})" for w, kept in wv.same_as.items()), file=sys.stderr)
    if len(wv.words) < 3:
        raise ValueError(f"need at least 3 words the vocabulary knows to draw a 2-D picture, got "
                         f"{len(wv.words)}: {', '.join(wv.words) or '(none)'}")
    coords, explained = pca_2d(wv.vectors)
    plot_embeddings(coords, wv.words, explained, out,
                    title=f"word embeddings of {model_label(model_dir)}, PCA to 2-D")
    width = max(len(w) for w in wv.words)
    print(f"{'word':<{width}}  {'pieces':<24}  nearest (cosine)")
    for word, pieces, (j, sim) in zip(wv.words, wv.pieces, cosine_neighbours(wv.vectors)):
        print(f"{word:<{width}}  {' '.join(pieces):<24}  {wv.words[j]} {sim:.3f}")
    print(f"PCA: the two axes explain {explained[0]:.1%} and {explained[1]:.1%} of the variance")
    print(f"wrote {out}")
    return 0
