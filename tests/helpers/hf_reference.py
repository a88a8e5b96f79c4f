"""Build the Hugging Face reference for a minibert model: same config, same weights (copied by name)."""

import numpy as np


def hf_config(cfg, **extra):
    import transformers
    d = {k: v for k, v in cfg.to_dict().items() if k not in ("architectures",)}
    d.update(extra)
    hf = transformers.BertConfig(**d)
    hf._attn_implementation = "eager"  # the textbook attention, like ours (sdpa would differ only by rounding)
    return hf


def copy_weights(model, hf_model):
    """Copy minibert params into the torch model by name; every torch parameter must be found."""
    import torch
    with torch.no_grad():
        for name, p in hf_model.named_parameters():
            p.copy_(torch.from_numpy(np.ascontiguousarray(model.params[name])).to(p.dtype))


def torch_grads(hf_model):
    return {name: p.grad.double().numpy() for name, p in hf_model.named_parameters() if p.grad is not None}


def max_rel_diff(ours, ref, floor=1e-6):
    """max |ours - ref| divided by the reference tensor's scale (its max |value|, at least `floor`)."""
    ours, ref = np.asarray(ours, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    scale = max(float(np.abs(ref).max()), floor)
    return float(np.abs(ours - ref).max()) / scale
