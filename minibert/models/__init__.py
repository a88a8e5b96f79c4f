from minibert.models.bert import BertModel
from minibert.models.classification import BertForSequenceClassification
from minibert.models.outputs import ModelOutput
from minibert.models.pretraining import BertForMaskedLM, BertForPreTraining

__all__ = ["BertModel", "BertForSequenceClassification", "BertForPreTraining", "BertForMaskedLM", "ModelOutput"]
