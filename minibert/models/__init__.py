from minibert.models.bert import BertModel
from minibert.models.outputs import ModelOutput
from minibert.models.pretraining import BertForMaskedLM, BertForPreTraining

__all__ = ["BertModel", "BertForPreTraining", "BertForMaskedLM", "ModelOutput"]
