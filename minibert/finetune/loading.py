"""Load a checkpoint as a classifier for new labels, and save a fine-tuned one with its tokenizer."""

from __future__ import annotations

import warnings
from pathlib import Path

from minibert.config import BertConfig
from minibert.models.auto import model_class
from minibert.models.classification import BertForSequenceClassification, labels_from_config

CLASSIFIER = ("classifier.weight", "classifier.bias")
NEW_HEAD = CLASSIFIER + ("pre_classifier.weight", "pre_classifier.bias")  # DistilBERT's head has two layers


def load_tokenizer(folder: Path):
    from minibert.tokenizer import WordPieceTokenizer
    return WordPieceTokenizer.from_pretrained(folder)


def load_for_finetuning(checkpoint: Path, label_names: list[str], seed: int = 0, log=print):
    """A BertForSequenceClassification (DistilBertForSequenceClassification for a DistilBERT checkpoint) with the
    checkpoint's body and a classifier for `label_names`.

    - a classifier checkpoint with exactly these labels: everything is loaded (training continues);
    - any other checkpoint (a pre-trained body, or a classifier for other labels): the body is loaded and the
      classifier is new, initialised as BERT does (seeded).
    Checkpoint warnings other than the expected new classifier (e.g. a missing pooler) are passed on to `log`.
    """
    config = BertConfig.from_json_file(checkpoint)
    classifier_class = model_class(config, "classifier")
    existing = labels_from_config(config)
    same_labels = existing is not None and list(existing.values()) == list(label_names)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if same_labels:
            model = classifier_class.from_pretrained(checkpoint)
        else:
            # Load with the checkpoint's own head size (so a classifier of another shape is no error), then move
            # the body into a model with a fresh classifier of the right size.
            own_size = len(existing) if existing else 2
            loaded = classifier_class.from_pretrained(checkpoint, num_labels=own_size)
            model = classifier_class(loaded.config, num_labels=len(label_names), seed=seed)
            for name, p in loaded.params.items():
                if name not in CLASSIFIER:
                    model.params[name][...] = p
            del loaded
    for w in caught:
        message = str(w.message)
        if "newly initialised" in message:
            # The new head is the point of fine-tuning (said our way below); anything else missing is news.
            others = [part for part in _listed(message) if part not in NEW_HEAD]
            if others:
                log(f"warning: {checkpoint}: {', '.join(others)} not in the checkpoint: newly initialised, "
                    f"trained from scratch now")
            continue
        if "not used" in message and all(part.startswith(("cls.", "vocab_", "...")) for part in _listed(message)):
            log("note: the checkpoint's pre-training heads (cls.* / vocab_*) are not part of a classifier; left out")
            continue
        log(f"warning: {message}")
    if not same_labels:
        log(f"new classifier for {len(label_names)} classes (classifier.weight, classifier.bias initialised)")
    model.set_labels(label_names)
    model.config.extra["problem_type"] = "single_label_classification"
    return model


def _listed(message: str) -> list[str]:
    # "...were newly initialised (train them before use): a, b, c" -> [a, b, c]
    tail = message.rsplit(": ", 1)[-1]
    return [part.strip() for part in tail.split(",") if part.strip()]


def load_classifier(checkpoint: Path, log=print) -> BertForSequenceClassification:
    """A fine-tuned classifier for prediction; its config must name the labels."""
    config = BertConfig.from_json_file(checkpoint)
    if labels_from_config(config) is None:
        raise ValueError(f"{checkpoint / 'config.json'}: no id2label: this is not a fine-tuned classifier "
                         f"(fine-tune one with 'minibert finetune')")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = model_class(config, "classifier").from_pretrained(checkpoint)
    for w in caught:
        if "classifier.weight" in str(w.message):
            raise ValueError(f"{checkpoint}: the checkpoint has no trained classifier ({w.message})")
        log(f"warning: {w.message}")
    return model.eval()


def save_classifier(model, tokenizer, folder: Path):
    """config.json + model.safetensors + the tokenizer files: a folder transformers and minibert both load."""
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
