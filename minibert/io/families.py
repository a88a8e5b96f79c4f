"""Checkpoint names of BERT's descendants: minibert keeps every family under BERT's names (the body under
"bert.", heads under "cls."; ALBERT's one shared layer as layer 0), so the whole training and fine-tuning code is
the same for all of them. Saving renames to the family's Hugging Face names, loading renames back:

    model_type             body prefix              MLM head                    other
    bert                   bert.                    cls.predictions.*           cls.seq_relationship.*
    roberta                roberta.                 lm_head.{dense,layer_norm,bias}
    roberta-prelayernorm   roberta_prelayernorm.    lm_head.*                   final LayerNorm at <prefix>LayerNorm
    albert                 albert.                  predictions.{dense,LayerNorm,bias}   sop_classifier.classifier.*
                           encoder.layer.0.X  <->  encoder.albert_layer_groups.0.albert_layers.0.X' (see below)

A sequence classifier is BERT's pooler (dense + tanh on [CLS]) then a linear layer. RoBERTa's classification head
computes the same (dense + tanh on <s>, then out_proj; it adds a dropout before the dense that only matters in
training), so a RoBERTa-family classifier saves bert.pooler.dense as classifier.dense and classifier as
classifier.out_proj.
"""

from __future__ import annotations

HF_PREFIX = {"bert": "bert.", "roberta": "roberta.", "roberta-prelayernorm": "roberta_prelayernorm.",
             "albert": "albert."}
CLASS_PREFIX = {"bert": "Bert", "roberta": "Roberta", "roberta-prelayernorm": "RobertaPreLayerNorm",
                "albert": "Albert"}

_ROBERTA_HEAD = (("cls.predictions.transform.dense.", "lm_head.dense."),
                 ("cls.predictions.transform.LayerNorm.", "lm_head.layer_norm."),
                 ("cls.predictions.", "lm_head."))  # .bias, and the tied decoder's names
# (minibert name fragment, Hugging Face fragment); applied to the name after the body prefix
_ALBERT_LAYER = "encoder.albert_layer_groups.0.albert_layers.0."
BODY_RENAMES = {
    "albert": (("encoder.layer.0.attention.self.", _ALBERT_LAYER + "attention."),
               ("encoder.layer.0.attention.output.dense.", _ALBERT_LAYER + "attention.dense."),
               ("encoder.layer.0.attention.output.LayerNorm.", _ALBERT_LAYER + "attention.LayerNorm."),
               ("encoder.layer.0.intermediate.dense.", _ALBERT_LAYER + "ffn."),
               ("encoder.layer.0.output.dense.", _ALBERT_LAYER + "ffn_output."),
               ("encoder.layer.0.output.LayerNorm.", _ALBERT_LAYER + "full_layer_layer_norm."),
               ("pooler.dense.", "pooler.")),
}
HEAD_RENAMES = {
    "roberta": _ROBERTA_HEAD,
    "roberta-prelayernorm": _ROBERTA_HEAD,
    "albert": (("cls.predictions.transform.dense.", "predictions.dense."),
               ("cls.predictions.transform.LayerNorm.", "predictions.LayerNorm."),
               ("cls.predictions.", "predictions."),  # .bias, and the tied decoder's names
               ("cls.seq_relationship.", "sop_classifier.classifier.")),
}
# minibert's class -> the family's class name (where transformers has one that computes the same thing)
ARCHITECTURES = {
    "roberta": {"BertForPreTraining": "ForMaskedLM"},  # RoBERTa has no NSP head: its tensors are left unused
    "roberta-prelayernorm": {"BertForPreTraining": "ForMaskedLM"},
}


def _rename(name, pairs, forward):
    """Replace the longest matching leading fragment (so "attention.dense." wins over "attention.")."""
    matches = [(old, new) for old, new in ((o, t) if forward else (t, o) for o, t in pairs) if name.startswith(old)]
    if not matches:
        return name
    old, new = max(matches, key=lambda m: len(m[0]))
    return new + name[len(old):]


ROBERTA_CLASSIFIER = (("bert.pooler.dense.", "classifier.dense."), ("classifier.", "classifier.out_proj."))


def to_hf_name(name: str, model_type: str, base_prefix: str, classifier: bool = False) -> str:
    """minibert parameter name -> the family's Hugging Face state-dict name (classifier: the model is a
    sequence classifier, whose head RoBERTa names differently)."""
    if model_type not in HF_PREFIX or model_type == "bert":  # BERT, or a family that names its own (ELECTRA)
        return name
    if classifier and model_type in ("roberta", "roberta-prelayernorm"):
        renamed = _rename(name, ROBERTA_CLASSIFIER, True)
        if renamed != name:
            return renamed
    if base_prefix == "" or name.startswith(base_prefix):
        body = _rename(name[len(base_prefix):], BODY_RENAMES.get(model_type, ()), True)
        return (HF_PREFIX[model_type] if base_prefix else "") + body
    return _rename(name, HEAD_RENAMES.get(model_type, ()), True)


def from_hf_name(key: str, model_type: str) -> str:
    """The family's Hugging Face state-dict name -> minibert's (body under "bert." when the file has a prefix)."""
    if model_type not in HF_PREFIX or model_type == "bert":
        return key
    if model_type in ("roberta", "roberta-prelayernorm") and key.startswith("classifier."):
        return _rename(key, ROBERTA_CLASSIFIER, False)
    prefix = HF_PREFIX[model_type]
    has_prefix = key.startswith(prefix)
    body = key[len(prefix):] if has_prefix else key
    renamed = _rename(body, BODY_RENAMES.get(model_type, ()), False)
    if has_prefix:
        return "bert." + renamed
    head = _rename(key, HEAD_RENAMES.get(model_type, ()), False)
    return head if head != key else renamed


def architecture(class_name: str, model_type: str) -> str:
    """"BertForMaskedLM" -> "RobertaForMaskedLM" for model_type roberta, and so on."""
    if model_type not in CLASS_PREFIX or model_type == "bert" or not class_name.startswith("Bert"):
        return class_name
    suffix = ARCHITECTURES.get(model_type, {}).get(class_name, class_name[len("Bert"):])
    return CLASS_PREFIX[model_type] + suffix
