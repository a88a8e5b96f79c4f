"""Pick the model class a checkpoint folder needs from its config.json (model_type), so every command that
loads "a BERT" also loads a DistilBERT.

    kind        model_type "bert"              model_type "distilbert"              model_type "deberta-v2"
    body        BertModel                      DistilBertModel                      DebertaV2Model
    mlm         BertForMaskedLM                DistilBertForMaskedLM                DebertaV2ForMaskedLM
    classifier  BertForSequenceClassification  DistilBertForSequenceClassification  DebertaV2ForSequenceClassification
"""

from __future__ import annotations

from pathlib import Path

from minibert.config import BertConfig

KINDS = ("body", "mlm", "classifier")


def model_class(config: BertConfig, kind: str):
    if kind not in KINDS:
        raise ValueError(f"model kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if getattr(config, "model_type", "bert") == "distilbert":
        from minibert.models.distilbert import DistilBertForMaskedLM, DistilBertModel
        from minibert.models.distilbert_classification import DistilBertForSequenceClassification
        return {"body": DistilBertModel, "mlm": DistilBertForMaskedLM,
                "classifier": DistilBertForSequenceClassification}[kind]
    if getattr(config, "model_type", "bert") == "deberta-v2":
        from minibert.models.deberta import DebertaV2ForMaskedLM, DebertaV2ForSequenceClassification, DebertaV2Model
        return {"body": DebertaV2Model, "mlm": DebertaV2ForMaskedLM,
                "classifier": DebertaV2ForSequenceClassification}[kind]
    from minibert.models import BertForMaskedLM, BertForSequenceClassification, BertModel
    return {"body": BertModel, "mlm": BertForMaskedLM, "classifier": BertForSequenceClassification}[kind]


def load_body(folder, **kwargs):
    """The encoder of any BERT, DistilBERT or DeBERTa folder (its heads, if any, unused). add_pooling_layer applies
    to BERT only (DistilBERT and DeBERTa have no pooler). A run folder loads its latest checkpoint."""
    from minibert.io.model_folder import resolve_model_folder
    folder = resolve_model_folder(folder, option=None)
    cls = model_class(BertConfig.from_json_file(Path(folder) / "config.json"), "body")
    if getattr(cls, "model_type", "bert") != "bert":
        kwargs.pop("add_pooling_layer", None)
    return cls.from_pretrained(folder, **kwargs)
