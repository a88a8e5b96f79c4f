"""minibert: BERT from first principles in NumPy.

Every layer's forward and backward pass is written by hand (minibert/layers/), the models keep Hugging Face's
parameter names (minibert/models/), and tests prove the numbers equal transformers'.
"""

__version__ = "0.1.0"

from minibert._malloc import keep_freed_memory  # called by the CLI and benchmarks; see minibert/_malloc.py

from minibert.config import BertConfig
from minibert.models import BertForMaskedLM, BertForPreTraining, BertForSequenceClassification, BertModel
from minibert.models import BertForQuestionAnswering, BertForTokenClassification
from minibert.optim import AdamW, clip_grad_norm, linear_warmup_decay
from minibert.tokenizer import WordPieceTokenizer, train_wordpiece
from minibert.embeddings import SentenceEncoder, encode_sentences
from minibert.distilbert_config import DistilBertConfig
from minibert.models.distilbert import DistilBertForMaskedLM, DistilBertModel
from minibert.models.distilbert_classification import DistilBertForSequenceClassification
from minibert.deberta_config import DebertaV2Config
from minibert.models.deberta import (DebertaV2ForMaskedLM, DebertaV2ForQuestionAnswering,
                                     DebertaV2ForSequenceClassification, DebertaV2ForTokenClassification,
                                     DebertaV2Model)

__all__ = ["BertConfig", "BertModel", "BertForSequenceClassification", "BertForPreTraining", "BertForMaskedLM",
           "BertForTokenClassification", "BertForQuestionAnswering", "AdamW", "clip_grad_norm",
           "linear_warmup_decay", "keep_freed_memory", "WordPieceTokenizer", "train_wordpiece",
           "SentenceEncoder", "encode_sentences", "DistilBertConfig", "DistilBertModel", "DistilBertForMaskedLM",
           "DistilBertForSequenceClassification", "DebertaV2Config", "DebertaV2Model", "DebertaV2ForMaskedLM",
           "DebertaV2ForSequenceClassification", "DebertaV2ForTokenClassification", "DebertaV2ForQuestionAnswering"]
