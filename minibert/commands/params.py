"""`minibert params`: the parameter table of a config or a saved model, counted from a real model's params."""

from __future__ import annotations

from minibert.viz.model_select import MODEL_CLASSES, build_model, model_class_name, resolve_config


def add_arguments(parser):
    parser.description = (
        "Print how many parameters each part of a BERT has (embeddings, one encoder layer, all layers, pooler, "
        "MLM head, NSP head, total). The numbers come from building the model and grouping its parameters by "
        "name, so they always match the code. The MLM decoder reuses the word-embedding matrix (tied weights): "
        "it is shown once, with a note.")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--config", default=None,
                        help="a preset (tiny, mini, small, base, large) or a config.json file or folder "
                             "(default: mini)")
    source.add_argument("--model", default=None, metavar="DIR",
                        help="a model folder, a pre-training run folder or 'minilm' (reads its config.json)")
    parser.add_argument("--model-class", choices=MODEL_CLASSES, default=None,
                        help="which model to count (default: the folder's 'architectures', else "
                             "BertForPreTraining)")
    parser.add_argument("--vocab-size", type=int, default=None,
                        help="override the config's vocabulary size (e.g. to match your tokenizer)")


def run(args) -> int:
    config_arg = args.config if (args.config or args.model) else "mini"
    config, source = resolve_config(config_arg, args.model)
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
