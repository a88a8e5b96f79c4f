"""`minibert similarity "text a" "text b"`: cosine similarity of two sentence embeddings (-1..1)."""

from __future__ import annotations


def add_arguments(parser):
    parser.add_argument("text_a", metavar="A", help="first text")
    parser.add_argument("text_b", metavar="B", help="second text")
    parser.add_argument("--model", default="minilm",
                        help="checkpoint folder (config.json, model.safetensors, vocab.txt), or 'minilm' for the "
                             "built-in all-MiniLM-L6-v2 (default)")
    parser.add_argument("--max-length", type=int, default=None,
                        help="truncate texts to this many tokens (default: the model's)")


def run(args) -> int:
    from minibert.commands.embed import check_max_length
    from minibert.embeddings import SentenceEncoder

    check_max_length(args)
    encoder = SentenceEncoder.from_pretrained(args.model, max_length=args.max_length)
    print(f"{encoder.similarity(args.text_a, args.text_b):.4f}")
    return 0
