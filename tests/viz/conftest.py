"""Fixtures of the visualisation tests: a tiny saved model with a tiny vocabulary (the headless Chromium they
drive is tests/conftest.py's `browser`). Helpers live in viz_helpers.py.
"""

from __future__ import annotations

import pytest
from viz_helpers import MAX_POSITIONS, VOCAB


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """A 2-layer, 2-head BertForPreTraining and its WordPiece vocabulary, saved as a model folder.

    initializer_range 0.08 (not BERT's 0.02) so that random attention is visibly uneven: with 0.02 every row
    would be almost uniform and a picture of it would show nothing.
    """
    from minibert.config import BertConfig
    from minibert.models import BertForPreTraining
    from minibert.tokenizer import WordPieceTokenizer
    folder = tmp_path_factory.mktemp("tiny_model")
    config = BertConfig.preset("tiny", vocab_size=len(VOCAB), max_position_embeddings=MAX_POSITIONS,
                               initializer_range=0.08)
    BertForPreTraining(config, seed=3).save_pretrained(folder)
    WordPieceTokenizer(VOCAB, model_max_length=MAX_POSITIONS).save_pretrained(folder)
    return folder

