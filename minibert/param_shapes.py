"""A model's parameters before any array exists: the dtypes minibert computes in, and BERT's parameters by their
Hugging Face names with the shapes a config gives them (in the state dict's order).

The models build their arrays from these (models/bert.py and the heads), and loading a checkpoint checks its
tensors against them before the model is built, so a wrong file fails before any large allocation
(io/checkpoint.py).
"""

from __future__ import annotations

import numpy as np

from minibert.layers.encoder_layer import layer_norm_names


def check_dtype(dtype):
    """`dtype` as a NumPy dtype, float32 or float64 (the only ones minibert computes in); a one-line ValueError for
    any other, including names NumPy does not know ("bfloat16")."""
    try:
        checked = np.dtype(dtype)
    except TypeError:  # "data type 'bfloat16' not understood"
        checked = None
    if checked not in (np.float32, np.float64):
        raise ValueError(f"dtype must be float32 or float64, got {repr(dtype) if checked is None else checked}")
    return checked


def needs_projection(config):
    """Factorised embeddings (ALBERT, ELECTRA): tables of width E != H, then a linear map E -> H."""
    return config.embedding_width != config.hidden_size


# The projection's name in each family that has one (Hugging Face's names); ELECTRA passes its own.
PROJECTION_NAMES = {"albert": "encoder.embedding_hidden_mapping_in"}


def _projection_name(config, project_name):
    project_name = project_name or PROJECTION_NAMES.get(config.model_type)
    if needs_projection(config) and not project_name:
        raise ValueError(f"embedding_size {config.embedding_size} differs from hidden_size {config.hidden_size}, but "
                         f"model_type {config.model_type!r} has no projection E -> H: only ALBERT's (model_type "
                         f"albert) and ELECTRA's models have one; drop embedding_size or use one of those")
    return project_name if needs_projection(config) else None


def bert_param_shapes(config, prefix="", pooler=True, project_name=None):
    """Name -> shape of every BertModel parameter, in Hugging Face's state-dict order.

    With embedding_size E != hidden_size H the embedding tables are E wide and `{prefix}{project_name}` is the
    E -> H projection (the family names it: ELECTRA "embeddings_project", ALBERT
    "encoder.embedding_hidden_mapping_in")."""
    H, F, E = config.hidden_size, config.intermediate_size, config.embedding_width
    shapes = {
        prefix + "embeddings.word_embeddings.weight": (config.vocab_size, E),
        prefix + "embeddings.position_embeddings.weight": (config.max_position_embeddings, E),
        prefix + "embeddings.token_type_embeddings.weight": (config.type_vocab_size, E),
        prefix + "embeddings.LayerNorm.weight": (E,),
        prefix + "embeddings.LayerNorm.bias": (E,),
    }
    project_name = _projection_name(config, project_name)
    if project_name:
        shapes[f"{prefix}{project_name}.weight"] = (H, E)
        shapes[f"{prefix}{project_name}.bias"] = (H,)
    ln1, ln2 = layer_norm_names(config)
    for i in range(1 if config.shared_layers else config.num_hidden_layers):  # ALBERT: one set, used by all
        p = f"{prefix}encoder.layer.{i}."
        for name in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"):
            shapes[p + name + ".weight"] = (H, H)
            shapes[p + name + ".bias"] = (H,)
        if ln1 == "attention.LayerNorm":  # pre-LN: before the attention, in Hugging Face's state-dict order
            shapes[p + "attention.LayerNorm.weight"] = (H,)
            shapes[p + "attention.LayerNorm.bias"] = (H,)
        else:
            shapes[p + "attention.output.LayerNorm.weight"] = (H,)
            shapes[p + "attention.output.LayerNorm.bias"] = (H,)
        if ln2 == "intermediate.LayerNorm":
            shapes[p + "intermediate.LayerNorm.weight"] = (H,)
            shapes[p + "intermediate.LayerNorm.bias"] = (H,)
        shapes[p + "intermediate.dense.weight"] = (F, H)
        shapes[p + "intermediate.dense.bias"] = (F,)
        shapes[p + "output.dense.weight"] = (H, F)
        shapes[p + "output.dense.bias"] = (H,)
        if ln2 == "output.LayerNorm":
            shapes[p + "output.LayerNorm.weight"] = (H,)
            shapes[p + "output.LayerNorm.bias"] = (H,)
    if config.layer_norm_position == "pre":  # RobertaPreLayerNorm's final LayerNorm, after the last layer
        shapes[prefix + "LayerNorm.weight"] = (H,)
        shapes[prefix + "LayerNorm.bias"] = (H,)
    if pooler:
        shapes[prefix + "pooler.dense.weight"] = (H, H)
        shapes[prefix + "pooler.dense.bias"] = (H,)
    return shapes
