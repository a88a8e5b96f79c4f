"""`minibert shapes`: every tensor's shape on a batch's way through the model, traced from a real forward pass."""

from __future__ import annotations

from minibert.viz.model_select import add_config_arguments, build_model, config_from_args, model_class_name


def add_arguments(parser):
    parser.description = (
        "Follow one batch through a BERT, from input ids to logits: which layer runs, what it computes, the "
        "shape of its output written with letters (B batch, T tokens, H hidden, A heads, D head size, "
        "F feed-forward, V vocabulary) and in numbers, and the parameters of each stage. The shapes are "
        "recorded while a small random batch really runs through the model, so they always match the code.")
    add_config_arguments(parser, model_note="its config.json; weights are not needed for shapes")
    parser.add_argument("--batch-size", type=int, default=3, help="B, sequences in the batch (default 3)")
    parser.add_argument("--seq-len", type=int, default=None,
                        help="T, tokens per sequence (default 10, at most max_position_embeddings)")
    parser.add_argument("--all-layers", action="store_true",
                        help="print every encoder layer in full instead of folding identical ones")


def run(args) -> int:
    config, source = config_from_args(args)
    seq_len = args.seq_len if args.seq_len is not None else min(10, config.max_tokens)
    # Check the sizes before building a (possibly large) model.
    if args.batch_size < 1:
        raise ValueError(f"--batch-size must be at least 1, got {args.batch_size}")
    if not 1 <= seq_len <= config.max_tokens:
        raise ValueError(f"--seq-len must be in 1..{config.max_tokens} (max_position_embeddings "
                         f"of {source}), got {seq_len}")
    class_name = model_class_name(config, args.model_class)
    model = build_model(config, class_name)
    from minibert.viz.shapes import format_journey, trace_forward
    journey = trace_forward(model, batch_size=args.batch_size, seq_len=seq_len)
    print(format_journey(journey, model, f"A batch's journey through {class_name} ({source})",
                         all_layers=args.all_layers))
    return 0
