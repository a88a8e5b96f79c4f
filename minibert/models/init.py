"""Parameter initialisation as BERT does it: weights ~ truncated normal(0, initializer_range) cut at two standard
deviations, biases 0, LayerNorm weight 1 and bias 0, and the [PAD] embedding row 0.

As in the original TensorFlow BERT, initializer_range is the std of the normal before cutting; the cut values have
a std of about 0.88 x initializer_range. (Hugging Face's PyTorch port draws from a plain normal instead.)"""

import numpy as np


def truncated_normal(rng, shape, std, dtype):
    x = rng.standard_normal(shape)
    flat = x.reshape(-1)
    bad = np.flatnonzero(np.abs(flat) > 2.0)
    while bad.size:  # redraw the ~5% beyond two standard deviations, then those of them that fell out again
        flat[bad] = rng.standard_normal(bad.size)
        bad = bad[np.abs(flat[bad]) > 2.0]
    return (x * std).astype(dtype)


def init_param(name, shape, rng, config, dtype):
    if name.endswith(("LayerNorm.weight", "layer_norm.weight")):  # BERT's and DistilBERT's names
        return np.ones(shape, dtype=dtype)
    if name.endswith("bias"):
        return np.zeros(shape, dtype=dtype)
    w = truncated_normal(rng, shape, config.initializer_range, dtype)
    if name.endswith("word_embeddings.weight"):
        w[config.pad_token_id] = 0.0
    return w
