"""The student: a DistilBERT initialised from a teacher's weights, and the teacher, loaded from any BERT folder.

As DistilBERT did, the student keeps the teacher's width and takes a subset of its layers: by default k layers
spread evenly over the teacher's L, both ends included (round(i (L-1)/(k-1))): 12 -> 6 gives 0,2,4,7,9,11,
DistilBERT's own choice; 6 -> 3 gives 0,2,5). The embeddings and the MLM head are copied.

Token types: DistilBERT has none. A BERT adds token_type_embeddings[type] to every input; single texts are all
type 0, so the student adds the teacher's type-0 row to its *position* embeddings (every position gets it,
exactly as before). Folding it into the word embeddings would work for the encoder too, but the word-embedding
matrix is also the tied MLM decoder, whose logits would then move. With all of the teacher's layers, the student
computes exactly the teacher's function on type-0 inputs (tests/distill/test_student_init.py).
"""

from __future__ import annotations

import warnings
from pathlib import Path

from minibert.config import BertConfig
from minibert.distilbert_config import DistilBertConfig
from minibert.io.checkpoint import CheckpointWarning, TensorSource
from minibert.models.auto import load_body, model_class
from minibert.models.distilbert import DistilBertForMaskedLM, DistilBertModel

MLM_HEAD_TENSORS = ("cls.predictions.transform.dense.weight", "vocab_transform.weight")


def default_teacher_layers(teacher_layers: int, student_layers: int) -> list[int]:
    if not 1 <= student_layers <= teacher_layers:
        raise ValueError(f"--student-layers must be in 1..{teacher_layers} (the teacher's layers), got "
                         f"{student_layers}")
    if student_layers == 1:
        return [teacher_layers - 1]
    return [round(i * (teacher_layers - 1) / (student_layers - 1)) for i in range(student_layers)]


def check_teacher_layers(layers, teacher_layers: int) -> list[int]:
    layers = [int(i) for i in layers]
    bad = [i for i in layers if not 0 <= i < teacher_layers]
    if not layers or bad:
        raise ValueError(f"--teacher-layers must name layers in 0..{teacher_layers - 1}, got {layers}")
    return layers


def has_mlm_head(checkpoint: Path) -> bool:
    names = set(TensorSource(Path(checkpoint)).names())
    return any(n in names for n in MLM_HEAD_TENSORS)


def load_teacher(checkpoint: Path, mlm_head: bool):
    """The teacher in eval mode: with its MLM head (BertForMaskedLM or DistilBertForMaskedLM) or the bare encoder.
    Tensors it does not need (pooler, next-sentence head) are left out without a warning."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*not used by", category=CheckpointWarning)
        if mlm_head:
            config = BertConfig.from_json_file(Path(checkpoint) / "config.json")
            teacher = model_class(config, "mlm").from_pretrained(checkpoint)
        else:
            teacher = load_body(checkpoint, add_pooling_layer=False)
    return teacher.eval()


def _bert_prefix(model) -> str:
    return "bert." if model.base_prefix else ""


def student_from_teacher(teacher, layers, mlm_head: bool, seed: int = 0, dropout: float | None = None):
    """A DistilBertForMaskedLM (mlm_head) or DistilBertModel with the teacher's width and dtype, layer j copied
    from teacher layer layers[j], embeddings (type-0 row folded into the positions) and MLM head copied."""
    layers = check_teacher_layers(layers, teacher.config.num_hidden_layers)
    overrides = {"num_hidden_layers": len(layers)}
    if dropout is not None:
        overrides.update(hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout)
    config = DistilBertConfig.from_bert(teacher.config, **overrides)
    student = (DistilBertForMaskedLM if mlm_head else DistilBertModel)(config, seed=seed, dtype=teacher.dtype,
                                                                        init_weights=False)
    src, dst = teacher.bert_view(teacher.params), student.bert_view(student.params)
    t_prefix, s_prefix = _bert_prefix(teacher), _bert_prefix(student)
    layer_prefix = s_prefix + "encoder.layer."
    for name in student.bert_names:  # BERT-style names, shared by both sides
        if name.startswith(layer_prefix):
            j, _, tail = name[len(layer_prefix):].partition(".")
            source = f"{t_prefix}encoder.layer.{layers[int(j)]}.{tail}"
        elif name.startswith("cls."):
            source = name
        else:
            source = t_prefix + name[len(s_prefix):]
        if source not in src:
            raise ValueError(f"the teacher has no {source!r} (needed for the student's {student.bert_names[name]!r})"
                             f"; is it a BERT with an MLM head?")
        dst[name] = src[source]
    token_types = t_prefix + "embeddings.token_type_embeddings.weight"
    if token_types in src:
        dst[s_prefix + "embeddings.position_embeddings.weight"] += src[token_types][0]  # (P, H) + (H,)
    student.train()
    return student
