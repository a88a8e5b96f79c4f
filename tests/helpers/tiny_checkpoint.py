"""A tiny random BERT checkpoint folder (config.json, model.safetensors, vocab.txt) for tests of code that
loads models: embeddings, the embed/similarity commands."""

import numpy as np

from minibert import BertConfig, BertModel
from minibert.tokenizer import WordPieceTokenizer


def make_tiny_checkpoint(folder, vocab, cls=BertModel, seed=0, **config_overrides):
    """Save a `cls` on the "tiny" preset with len(vocab) tokens, and its vocab.txt, into `folder`.

    The initial weights get N(0, 0.1) noise on top, so biases and LayerNorm (which start at 0 and 1) matter
    too and no two tokens look alike."""
    config = BertConfig.preset("tiny", vocab_size=len(vocab), max_position_embeddings=16, **config_overrides)
    model = cls(config, seed=seed)
    rng = np.random.default_rng(seed)
    for p in model.params.values():
        p += rng.normal(0, 0.1, p.shape).astype(p.dtype)
    model.save_pretrained(folder)
    WordPieceTokenizer(vocab).save_pretrained(folder)
    return folder
