from minibert.models.bert import BertModel
from minibert.models.classification import BertForSequenceClassification
from minibert.models.outputs import ModelOutput
from minibert.models.pretraining import BertForMaskedLM, BertForPreTraining
from minibert.models.question_answering import BertForQuestionAnswering
from minibert.models.token_classification import BertForTokenClassification

__all__ = ["BertModel", "BertForSequenceClassification", "BertForPreTraining", "BertForMaskedLM",
           "BertForTokenClassification", "BertForQuestionAnswering", "ModelOutput"]
