"""Pick the model class a checkpoint folder needs from its config.json (model_type), so every command that
loads "a BERT" also loads a DistilBERT.

    kind      model_type "bert"                 model_type "distilbert"
    body      BertModel                         DistilBertModel
    mlm       BertForMaskedLM                   DistilBertForMaskedLM
"""

from __future__ import annotations

from pathlib import Path

from minibert.config import BertConfig

KINDS = ("body", "mlm")


def model_class(config: BertConfig, kind: str):
    if kind not in KINDS:
        raise ValueError(f"model kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if getattr(config, "model_type", "bert") == "distilbert":
        from minibert.models.distilbert import DistilBertForMaskedLM, DistilBertModel
        return {"body": DistilBertModel, "mlm": DistilBertForMaskedLM}[kind]
    from minibert.models import BertForMaskedLM, BertModel
    return {"body": BertModel, "mlm": BertForMaskedLM}[kind]


def load_body(folder, **kwargs):
    """The encoder of any BERT or DistilBERT folder, without pooler (its heads, if any, unused)."""
    cls = model_class(BertConfig.from_json_file(Path(folder) / "config.json"), "body")
    if getattr(cls, "model_type", "bert") == "bert":
        kwargs.setdefault("add_pooling_layer", False)
    return cls.from_pretrained(folder, **kwargs)
