"""`minibert shapes`: every tensor's shape on a batch's way through the model, traced from a real forward pass."""

from __future__ import annotations

from minibert.viz.model_select import MODEL_CLASSES, build_model, model_class_name, resolve_config


def add_arguments(parser):
    parser.description = (
        "Follow one batch through a BERT, from input ids to logits: which layer runs, what it computes, the "
        "shape of its output written with letters (B batch, T tokens, H hidden, A heads, D head size, "
        "F feed-forward, V vocabulary) and in numbers, and the parameters of each stage. The shapes are "
        "recorded while a small random batch really runs through the model, so they always match the code.")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--config", default=None,
                        help="a preset (tiny, mini, small, base, large) or a config.json file or folder "
                             "(default: mini)")
    source.add_argument("--model", default=None, metavar="DIR",
                        help="a model folder, a pre-training run folder or 'minilm' (its config.json; weights are "
                             "not needed for shapes)")
    parser.add_argument("--model-class", choices=MODEL_CLASSES, default=None,
                        help="which model (default: the folder's 'architectures', else BertForPreTraining)")
    parser.add_argument("--batch-size", type=int, default=3, help="B, sequences in the batch (default 3)")
    parser.add_argument("--seq-len", type=int, default=None,
                        help="T, tokens per sequence (default 10, at most max_position_embeddings)")
    parser.add_argument("--all-layers", action="store_true",
                        help="print every encoder layer in full instead of folding identical ones")


def run(args) -> int:
    config_arg = args.config if (args.config or args.model) else "mini"
    config, source = resolve_config(config_arg, args.model)
    seq_len = args.seq_len if args.seq_len is not None else min(10, config.max_position_embeddings)
    # Check the sizes before building a (possibly large) model.
    if args.batch_size < 1:
        raise ValueError(f"--batch-size must be at least 1, got {args.batch_size}")
    if not 1 <= seq_len <= config.max_position_embeddings:
        raise ValueError(f"--seq-len must be in 1..{config.max_position_embeddings} (max_position_embeddings "
                         f"of {source}), got {seq_len}")
    class_name = model_class_name(config, args.model_class)
    model = build_model(config, class_name)
    from minibert.viz.shapes import format_journey, trace_forward
    journey = trace_forward(model, batch_size=args.batch_size, seq_len=seq_len)
    print(format_journey(journey, model, f"A batch's journey through {class_name} ({source})",
                         all_layers=args.all_layers))
    return 0
