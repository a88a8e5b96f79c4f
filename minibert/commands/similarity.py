"""`minibert similarity "text a" "text b"`: cosine similarity of two sentence embeddings (-1..1)."""

from __future__ import annotations


def add_arguments(parser):
    parser.description = (
        "Print the cosine similarity (-1..1, 1 = the same direction) of two texts' sentence embeddings: the "
        "model's last hidden states averaged over the tokens (mean pooling), as 'minibert embed' computes them.")
    parser.add_argument("text_a", metavar="A", help="first text")
    parser.add_argument("text_b", metavar="B", help="second text")
    parser.add_argument("--model", default="minilm",
                        help="checkpoint folder (config.json, model.safetensors, vocab.txt), a pre-training run "
                             "folder (its latest checkpoint), or 'minilm' for the built-in all-MiniLM-L6-v2 (default)")
    parser.add_argument("--max-length", type=int, default=None,
                        help="truncate texts to this many tokens (default: the model's)")


def run(args) -> int:
    import sys

    from minibert.commands.embed import checked_model_folder, truncation_note
    from minibert.embeddings import SentenceEncoder

    for name, text in (("A", args.text_a), ("B", args.text_b)):
        if not text.strip():  # an empty text embeds as [CLS] [SEP] alone: any number printed would mean nothing
            raise ValueError(f"text {name} is empty: give two texts to compare")
    encoder = SentenceEncoder.from_pretrained(checked_model_folder(args), max_length=args.max_length)
    token_ids, lengths = encoder.tokenize_with_lengths([args.text_a, args.text_b])
    note = truncation_note(encoder.max_length, lengths, names=["text A", "text B"])
    if note:
        print(note, file=sys.stderr)
    print(f"{encoder.similarity_of_token_ids(*token_ids):.4f}")
    return 0
