"""DistilBertConfig, the BertConfig that reads and writes Hugging Face's DistilBERT config.json (its field names
and the table that maps them: minibert/config.py, beside BertConfig, whose from_dict returns a DistilBertConfig
for model_type "distilbert")."""

from minibert.config import DISTILBERT_FIELDS, LAYER_NORM_EPS, SHARED_FIELDS, DistilBertConfig

__all__ = ["DistilBertConfig", "DISTILBERT_FIELDS", "SHARED_FIELDS", "LAYER_NORM_EPS"]
