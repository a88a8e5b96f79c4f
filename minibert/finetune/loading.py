"""Load a checkpoint as a classifier (of sequences or tokens) for new labels, or as a question answerer, and save
a fine-tuned one with its tokenizer."""

from __future__ import annotations

import warnings
from pathlib import Path

from minibert.config import BertConfig
from minibert.models.auto import model_class
from minibert.models.classification import BertForSequenceClassification, labels_from_config

# Weights of other heads a checkpoint may carry; a model without that head leaves them out (a note, no warning).
OTHER_HEADS = ("cls.", "bert.pooler.", "pooler.", "classifier.", "qa_outputs.", "discriminator_predictions.",
               "vocab_", "...")  # (ELECTRA's replaced-token head and DistilBERT's MLM head too)


def _family_class(config, cls, checkpoint):
    """`cls` for a BERT-family checkpoint; its DistilBERT or DeBERTa version for one of those (models/auto.py)."""
    if config.model_type == "deberta-v2":
        from minibert.models import deberta
        return getattr(deberta, cls.__name__.replace("Bert", "DebertaV2", 1))
    if config.model_type != "distilbert":
        return cls
    if cls is not BertForSequenceClassification:
        raise ValueError(f"{checkpoint}: a DistilBERT checkpoint can be fine-tuned as a sequence classifier only; "
                         f"minibert has no DistilBERT version of {cls.__name__}")
    return model_class(config, "classifier")


def load_tokenizer(folder: Path):
    from minibert.tokenizer import WordPieceTokenizer
    return WordPieceTokenizer.from_pretrained(folder)


def load_for_finetuning(checkpoint: Path, label_names: list[str] | None, seed: int = 0, log=print,
                        cls=BertForSequenceClassification):
    """A `cls` (BertForSequenceClassification, BertForTokenClassification, or BertForQuestionAnswering with
    label_names None; DistilBertForSequenceClassification for a DistilBERT checkpoint) with the checkpoint's body
    and a head for `label_names`.

    - a classifier checkpoint with exactly these labels: everything is loaded (training continues);
    - any other checkpoint (a pre-trained body, or a classifier for other labels): the body is loaded and the
      classifier is new, initialised as BERT does (seeded).
    Checkpoint warnings other than the expected new classifier (e.g. a missing pooler) are passed on to `log`.
    """
    config = BertConfig.from_json_file(checkpoint)
    if config.model_type == "electra" and config.embedding_width != config.hidden_size:
        raise ValueError(f"{checkpoint}: an ELECTRA discriminator with embedding_size {config.embedding_width} != "
                         f"hidden_size {config.hidden_size}: BERT's classifier has no place for its "
                         f"embeddings_project, so fine-tuning it is not supported (pre-train with embedding_size = "
                         f"hidden_size)")
    cls = _family_class(config, cls, checkpoint)
    existing = labels_from_config(config)
    head = cls.head_names
    architecture = (config.extra.get("architectures") or [cls.__name__])[0]
    same_labels = architecture == cls.__name__ and (label_names is None or (
        existing is not None and list(existing.values()) == list(label_names)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if same_labels or label_names is None:
            model = cls.from_pretrained(checkpoint)
        else:
            # Load with the checkpoint's own head size (so a classifier of another shape is no error), then move
            # the body into a model with a fresh classifier of the right size.
            own_size = len(existing) if existing else 2
            loaded = cls.from_pretrained(checkpoint, num_labels=own_size)
            model = cls(loaded.config, num_labels=len(label_names), seed=seed)
            for name, p in loaded.params.items():
                if name not in head:
                    model.params[name][...] = p
            del loaded
    fresh_head = not same_labels
    for w in caught:
        message = str(w.message)
        if "newly initialised" in message:
            # The new head is the point of fine-tuning (said our way below); anything else missing is news.
            others = [part for part in _listed(message) if part not in head]
            if others:
                log(f"warning: {checkpoint}: {', '.join(others)} not in the checkpoint: newly initialised, "
                    f"trained from scratch now")
            continue
        if "not used" in message and all(part.startswith(OTHER_HEADS) for part in _listed(message)):
            kinds = sorted({"pooler" if "pooler" in p else p.split(".")[0] for p in _listed(message)} - {""})
            log(f"note: the checkpoint's other heads ({', '.join(kinds)}) are not part of a {cls.__name__}; "
                f"left out")
            continue
        log(f"warning: {message}")
    if fresh_head:
        what = f"classifier for {len(label_names)} classes" if label_names is not None else "start/end layer"
        log(f"new {what} ({', '.join(head)} initialised)")
    if model.config.model_type == "electra":  # a BERT head on the discriminator's body: saved as BERT's
        model.config.model_type = "bert"
    if label_names is not None:
        model.set_labels(label_names)
    if issubclass(cls, BertForSequenceClassification):
        model.config.extra["problem_type"] = "single_label_classification"
    return model


def _listed(message: str) -> list[str]:
    # "...were newly initialised (train them before use): a, b, c" -> [a, b, c]
    tail = message.rsplit(": ", 1)[-1]
    return [part.strip() for part in tail.split(",") if part.strip()]


def load_classifier(checkpoint: Path, log=print, cls=BertForSequenceClassification, config=None):
    """A fine-tuned model for prediction; a classifier's config must name the labels. config: the checkpoint's,
    when the caller has read it already."""
    config = config if config is not None else BertConfig.from_json_file(checkpoint)
    cls = _family_class(config, cls, checkpoint)
    head = cls.head_names
    if hasattr(cls, "set_labels") and labels_from_config(config) is None:
        raise ValueError(f"{checkpoint / 'config.json'}: no id2label: this is not a fine-tuned classifier "
                         f"(fine-tune one with 'minibert finetune')")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = cls.from_pretrained(checkpoint)
    for w in caught:
        if head[0] in str(w.message) and "newly initialised" in str(w.message):
            raise ValueError(f"{checkpoint}: the checkpoint has no trained {head[0].split('.')[0]} layer ({w.message})")
        if "not used" in str(w.message) and all(part.startswith(OTHER_HEADS) for part in _listed(str(w.message))):
            continue
        log(f"warning: {w.message}")
    return model.eval()


# what save_classifier writes
SAVED_FILES = ("config.json", "model.safetensors", "vocab.txt", "tokenizer.json", "tokenizer_config.json")
FINETUNING_KEY = "finetuning"  # config.json: how `minibert finetune` trained the model, for predict's defaults


def save_classifier(model, tokenizer, folder: Path, record: dict | None = None):
    """config.json + model.safetensors + the tokenizer files: a folder transformers and minibert both load.

    record: how the model was fine-tuned ({"max_length": ..., and what else predict should default to}), kept in
    config.json under "finetuning" (transformers keeps unknown keys as config attributes). Its max_length also
    becomes tokenizer_config.json's model_max_length, where transformers' tokenizers truncate when told to
    truncate without a max_length, and its token-classification and question-answering pipelines cut their
    windows (every tokenizer saved before said 512, the tokenizer's default: that value alone cannot tell a
    fine-tuned length from an old folder)."""
    if record is not None:
        model.config.extra[FINETUNING_KEY] = dict(record)
        tokenizer.model_max_length = record["max_length"]  # (every encode of a run passes its max_length)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def finetuning_record(config) -> dict:
    """What config.json says about how the model was fine-tuned (save_classifier); {} for a folder without it."""
    record = config.extra.get(FINETUNING_KEY)
    return record if isinstance(record, dict) else {}


def recorded_max_length(config, task_type: str | None) -> int | None:
    """The length the model was fine-tuned with, when minibert fine-tuned it for `task_type` (sequence, tokens,
    qa): a classifier's 128 tokens are no length for QA windows; None otherwise (no record, another task type's,
    or no positive integer)."""
    record = finetuning_record(config)
    recorded = record.get("max_length") if recorded_task_type(record) == task_type else None
    return recorded if isinstance(recorded, int) and not isinstance(recorded, bool) and recorded > 0 else None


def recorded_task_type(record: dict) -> str | None:
    """The --task-type a finetuning record was written by (sequence, tokens, qa); records written before it was
    kept are told apart by their keys (a QA reader's doc_stride, a classifier's text_pairs)."""
    if record.get("task_type"):
        return record["task_type"]
    if "doc_stride" in record:
        return "qa"
    return "sequence" if "text_pairs" in record else ("tokens" if record else None)
