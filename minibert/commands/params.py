"""`minibert params`: the parameter table of a config or a saved model, counted from a real model's params."""

from __future__ import annotations

from minibert.viz.model_select import add_config_arguments, build_model, config_from_args, model_class_name


def add_arguments(parser):
    parser.description = (
        "Print how many parameters each part of a BERT has (embeddings, one encoder layer, all layers, pooler, "
        "MLM head, NSP head, total). The numbers come from building the model and grouping its parameters by "
        "name, so they always match the code. The MLM decoder reuses the word-embedding matrix (tied weights): "
        "it is shown once, with a note.")
    add_config_arguments(parser, model_note="reads its config.json", class_what="which model to count")
    parser.add_argument("--vocab-size", type=int, default=None,
                        help="override the config's vocabulary size (e.g. to match your tokenizer)")


def run(args) -> int:
    config, source = config_from_args(args)
    if args.vocab_size is not None:
        if args.vocab_size < 1:
            raise ValueError(f"--vocab-size must be a positive integer, got {args.vocab_size}")
        import dataclasses
        config = dataclasses.replace(config, vocab_size=args.vocab_size)
    class_name = model_class_name(config, args.model_class)
    model = build_model(config, class_name)
    from minibert.viz.params_table import build_parameter_table, format_parameter_table
    table = build_parameter_table(model)
    print(format_parameter_table(table, config, f"Parameters of {class_name} ({source})"))
    return 0
