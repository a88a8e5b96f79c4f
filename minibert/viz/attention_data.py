"""Attention probabilities of a real model on one text: the data behind the PNG and the HTML view.

    result = compute_attention(model, tokenizer, "the cat sat on the mat because it was tired")
    result.tokens        # ["[CLS]", "the", "cat", ..., "[SEP]"]          T tokens
    result.attentions    # (L, A, T, T): layer, head, query token (row), key token (column); rows sum to 1
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass
class AttentionResult:
    tokens: list[str]
    token_type_ids: list[int]
    attentions: np.ndarray  # (L, A, T, T) float32
    text: str
    text_pair: str | None = None
    model_name: str = ""
    note: str = ""  # e.g. that the text was truncated

    @property
    def num_layers(self) -> int:
        return self.attentions.shape[0]

    @property
    def num_heads(self) -> int:
        return self.attentions.shape[1]


def check_layer_head(config, layer: int | None, head: int | None) -> None:
    """A clear error for a layer or head that the model does not have (0-based, as in the parameter names)."""
    L, A = config.num_hidden_layers, config.num_attention_heads
    if layer is not None and not 0 <= layer < L:
        raise ValueError(f"--layer {layer} is out of range: the model has {L} layers, numbered 0..{L - 1}")
    if head is not None and not 0 <= head < A:
        raise ValueError(f"--head {head} is out of range: the model has {A} heads per layer, numbered 0..{A - 1}")


def load_model_and_tokenizer(model_dir: str | Path, tokenizer_dir: str | Path | None = None):
    """The encoder of a saved model (any BERT checkpoint: heads are not needed) and its tokenizer."""
    tokenizer = load_tokenizer(model_dir, tokenizer_dir)
    return load_encoder(model_dir), tokenizer


def load_tokenizer(model_dir: str | Path, tokenizer_dir: str | Path | None = None):
    """The model's tokenizer (or the one in `tokenizer_dir`), checked against its config.json's vocab_size: no
    weights are read."""
    from minibert.config import BertConfig
    from minibert.tokenizer import WordPieceTokenizer
    model_dir = Path(model_dir)
    if not model_dir.is_dir():
        raise FileNotFoundError(f"--model {model_dir}: no such model folder")
    tokenizer = WordPieceTokenizer.from_pretrained(tokenizer_dir or model_dir)
    vocab_size = BertConfig.from_json_file(model_dir).vocab_size
    if tokenizer.vocab_size != vocab_size:
        raise ValueError(f"the tokenizer in {tokenizer_dir or model_dir} has {tokenizer.vocab_size} tokens but the "
                         f"model's config.json says vocab_size={vocab_size}")
    return tokenizer


def load_encoder(model_dir: str | Path):
    """The encoder of a saved model: BERT or DistilBERT, without its heads (attention needs none)."""
    from minibert.io.checkpoint import CheckpointWarning
    from minibert.models.auto import load_body
    with warnings.catch_warnings():
        # A pre-training checkpoint has MLM/NSP heads the encoder does not use: that is expected here.
        warnings.filterwarnings("ignore", message=".*not used by.*", category=CheckpointWarning)
        return load_body(model_dir, add_pooling_layer=False)


def check_texts(text: str, text_pair: str | None = None) -> None:
    """A one-line error for an empty text or --pair (the command says it before loading anything)."""
    if not text or not text.strip():
        raise ValueError("the text is empty: give a sentence to look at")
    if text_pair is not None and not text_pair.strip():
        raise ValueError("the --pair text is empty: give the second sentence, or leave --pair out")


def encode_for_model(tokenizer, config, text: str, text_pair: str | None = None):
    """Encode, cutting the text to the model's maximum length; returns (encoding, note)."""
    check_texts(text, text_pair)
    limit = min(config.max_tokens, getattr(tokenizer, "model_max_length", 10**9) or 10**9)
    full = tokenizer.encode(text, text_pair)
    if len(full.input_ids) <= limit:
        return full, ""
    enc = tokenizer.encode(text, text_pair, max_length=limit, truncation=True)
    return enc, (f"the text has {len(full.input_ids)} tokens but the model reads at most {limit}: "
                 f"truncated to the first {len(enc.input_ids)}")


def compute_attention(model, tokenizer, text: str, text_pair: str | None = None,
                      encoded=None) -> AttentionResult:
    """Run the model once (eval mode) and collect every layer's attention probabilities. `encoded`: what
    encode_for_model gave for this text, when the caller has it already (the command measures the text before
    the model loads)."""
    enc, note = encode_for_model(tokenizer, model.config, text, text_pair) if encoded is None else encoded
    ids = np.asarray([enc.input_ids], dtype=np.int64)  # (1, T)
    types = np.asarray([enc.token_type_ids], dtype=np.int64)  # (1, T)
    was_training = model.training
    model.eval()
    try:
        out = model.forward(ids, token_type_ids=types, output_attentions=True)
    finally:
        model.train(was_training)
    attentions = np.stack([a[0] for a in out.attentions]).astype(np.float32)  # (L, A, T, T)
    tokens = [tokenizer.ids_to_tokens[i] for i in enc.input_ids]
    return AttentionResult(tokens, list(enc.token_type_ids), attentions, text, text_pair,
                           getattr(model, "name_or_path", ""), note)
