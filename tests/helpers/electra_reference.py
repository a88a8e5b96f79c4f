"""Hugging Face ELECTRA references for the tests: an ElectraConfig from a minibert config, and a batch with
padding, two segments and masked positions."""

import numpy as np


def electra_config(cfg):
    import transformers
    d = {k: v for k, v in cfg.to_dict().items() if k not in ("architectures", "model_type")}
    d["embedding_size"] = cfg.embedding_size or cfg.hidden_size
    hf = transformers.ElectraConfig(**d)
    hf._attn_implementation = "eager"
    return hf


def electra_batch(cfg, seed=0, B=4, T=16):
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, cfg.vocab_size, (B, T))
    lengths = [T, T - 5, T - 9, T][:B]
    mask = np.zeros((B, T), dtype=np.int64)
    types = np.zeros((B, T), dtype=np.int64)
    for b, n in enumerate(lengths):
        mask[b, :n] = 1
        types[b, n // 2:n] = 1
    ids[mask == 0] = cfg.pad_token_id
    labels = np.full((B, T), -100)
    pick = (rng.random((B, T)) < 0.3) & (mask == 1)
    labels[pick] = rng.integers(5, cfg.vocab_size, int(pick.sum()))
    replaced = ((rng.random((B, T)) < 0.3) & (mask == 1)).astype(np.int64)
    return ids, types, mask, labels, replaced
