"""Helpers of the visualisation tests: the tiny vocabulary, PNG checks and reference attentions (the headless
Chromium is tests/helpers/browser.py's)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat", "because", "it", "was",
         "tired", "dog", "play", "##ing", "##s", "a", "king", "queen", "man", "woman", ".", ",", "<", ">", "/"]
MAX_POSITIONS = 24


def png_pixels(path):
    """The PNG as a float array (H, W, channels) in [0, 1]."""
    mpl_image = pytest.importorskip("matplotlib.image")
    return mpl_image.imread(str(path))


def assert_png_has_content(path, min_width=200, min_height=200):
    pixels = png_pixels(path)
    height, width = pixels.shape[:2]
    assert width >= min_width and height >= min_height, (path, pixels.shape)
    rgb = pixels[..., :3]
    assert rgb.std() > 0.05, f"{path} looks blank (pixel std {rgb.std():.4f})"
    return pixels


# ------------------------------------------------------------------------------------------ headless Chromium
def reference_attentions(model_dir, text):
    """(tokens, (L, A, T, T)) straight from the model's forward, for comparing with what was drawn."""
    from minibert.models import BertModel
    from minibert.tokenizer import WordPieceTokenizer
    tok = WordPieceTokenizer.from_pretrained(model_dir)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the pre-training heads are not used by a BertModel: expected
        model = BertModel.from_pretrained(model_dir)
    enc = tok.encode(text)
    out = model.forward(np.array([enc.input_ids]), output_attentions=True)
    return enc.tokens, np.stack([a[0] for a in out.attentions])
