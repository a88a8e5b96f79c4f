"""Input checks shared by the models: one clear ValueError before any work starts."""

import numpy as np

from minibert.layers.loss import IGNORE_INDEX


def ids_array(input_ids) -> np.ndarray:
    """`input_ids` as an array, or a ValueError saying what it is instead: text, a tokenizer's output, or rows of
    different lengths."""
    if isinstance(input_ids, (str, dict)) or hasattr(input_ids, "input_ids"):
        raise ValueError(f"input_ids must be token ids (integers), got {type(input_ids).__name__}: tokenize the "
                         f"text first, then pass an encoding's .input_ids, or a batch as forward(**batch)")
    try:
        return np.asarray(input_ids)
    except ValueError:  # NumPy: "inhomogeneous shape"
        raise ValueError("input_ids rows have different lengths: pad them to one length (the tokenizer's "
                         "encode_batch does) and pass attention_mask") from None


def check_inputs(config, input_ids, token_type_ids=None, attention_mask=None):
    """Return (input_ids, token_type_ids, attention_mask) as int64 arrays of shape (B, T)."""
    input_ids = ids_array(input_ids)
    if input_ids.size == 0:
        raise ValueError(f"input_ids has shape {input_ids.shape}: need at least one sequence of at least one token")
    if input_ids.ndim == 1:
        input_ids = input_ids[None, :]
    if input_ids.ndim != 2:
        raise ValueError(f"input_ids must have shape (batch, tokens), got shape {input_ids.shape}")
    if not np.issubdtype(input_ids.dtype, np.integer):
        raise ValueError(f"input_ids must be integers, got dtype {input_ids.dtype}")
    B, T = input_ids.shape
    if T > config.max_tokens:
        raise ValueError(f"sequence length {T} is longer than the {config.max_tokens} tokens "
                         f"max_position_embeddings ({config.max_position_embeddings}) allows")
    lo, hi = int(input_ids.min()), int(input_ids.max())
    if lo < 0 or hi >= config.vocab_size:
        bad = lo if lo < 0 else hi
        raise ValueError(f"token id {bad} is out of range: vocab_size is {config.vocab_size} (ids 0.."
                         f"{config.vocab_size - 1})")
    token_type_ids = _check_same_shape("token_type_ids", token_type_ids, input_ids.shape)
    if token_type_ids is None:
        token_type_ids = np.zeros((B, T), dtype=np.int64)
    elif not np.issubdtype(token_type_ids.dtype, np.integer):
        raise ValueError(f"token_type_ids must be integers, got dtype {token_type_ids.dtype}")
    elif token_type_ids.min() < 0 or token_type_ids.max() >= config.type_vocab_size:
        raise ValueError(f"token_type_ids must be in 0..{config.type_vocab_size - 1}, got values "
                         f"{int(token_type_ids.min())}..{int(token_type_ids.max())}")
    attention_mask = _check_same_shape("attention_mask", attention_mask, input_ids.shape)
    if attention_mask is not None and not np.isin(attention_mask, (0, 1)).all():
        bad = np.unique(attention_mask[~np.isin(attention_mask, (0, 1))])[:5]
        raise ValueError(f"attention_mask must hold only 0 (padding) and 1 (token), found {bad.tolist()}")
    return input_ids.astype(np.int64, copy=False), token_type_ids.astype(np.int64, copy=False), attention_mask


def _check_same_shape(name, array, shape):
    if array is None:
        return None
    array = np.asarray(array)
    if array.ndim == 1 and len(shape) == 2 and shape[0] == 1:
        array = array[None, :]
    if array.shape != shape:
        raise ValueError(f"{name} has shape {array.shape} but input_ids has shape {shape}")
    return array


def fit_shape(array, shape, name):
    """`array` as `shape`, when the two differ only by axes of size 1 ((T,) for a single sequence's (1, T), (B, 1)
    for (B,)); any other shape is an error naming `name`, even with the right number of values: (T, B) labels
    for a (B, T) batch would otherwise be read as the wrong tokens' targets."""
    array = np.asarray(array)
    if array.shape != tuple(shape) and [n for n in array.shape if n != 1] == [n for n in shape if n != 1]:
        array = array.reshape(shape)
    if array.shape != tuple(shape):
        raise ValueError(f"{name} has shape {array.shape}, expected {tuple(shape)}")
    return array


def check_labels(labels, shape, num_classes, name):
    labels = fit_shape(labels, shape, name)
    if not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(f"{name} must be integers, got dtype {labels.dtype}")
    valid = labels[labels != IGNORE_INDEX]
    if valid.size and (valid.min() < 0 or valid.max() >= num_classes):
        raise ValueError(f"{name} must be {IGNORE_INDEX} (ignored) or in 0..{num_classes - 1}, got "
                         f"{int(valid.min())}..{int(valid.max())}")
    return labels.astype(np.int64, copy=False)


def check_targets(input_ids, labels, next_sentence_label, config):
    """Check pre-training targets against the batch's shape before any work is done."""
    shape = ids_array(input_ids).shape
    if len(shape) == 1:
        shape = (1, shape[0])
    if labels is not None:
        labels = check_labels(labels, shape, config.vocab_size, "labels")
    if next_sentence_label is not None:
        next_sentence_label = check_labels(next_sentence_label, shape[:1], 2, "next_sentence_label")
    return labels, next_sentence_label
