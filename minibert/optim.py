"""AdamW with decoupled weight decay, the linear warmup/decay schedule and global-norm gradient clipping.

The update follows torch.optim.AdamW exactly (tests compare ten steps against it):
    p  <- p * (1 - lr * wd)                               decoupled weight decay (skipped for biases, LayerNorm)
    m  <- b1 m + (1 - b1) g ;  v <- b2 v + (1 - b2) g^2   moment estimates
    p  <- p - lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
"""

from __future__ import annotations

import math

import numpy as np


def default_no_decay(name: str) -> bool:
    """BERT does not decay biases or LayerNorm weights."""
    return name.endswith("bias") or "LayerNorm" in name


class AdamW:
    def __init__(self, params: dict, grads: dict, lr=1e-4, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.01,
                 no_decay=default_no_decay):
        if lr < 0 or eps < 0 or weight_decay < 0:
            raise ValueError(f"AdamW: lr, eps and weight_decay must be >= 0, got {lr}, {eps}, {weight_decay}")
        if not all(0.0 <= b < 1.0 for b in betas):
            raise ValueError(f"AdamW: betas must be in [0, 1), got {betas}")
        self.params, self.grads = params, grads
        self.lr, self.betas, self.eps, self.weight_decay = lr, tuple(betas), eps, weight_decay
        self.decay = {name: (not no_decay(name)) for name in params}
        self.m = {name: np.zeros_like(p) for name, p in params.items()}
        self.v = {name: np.zeros_like(p) for name, p in params.items()}
        self.t = 0  # steps taken
        self._tmp = {name: np.empty_like(p) for name, p in params.items()}  # scratch: no fresh allocations

    def step(self, lr: float | None = None):
        lr = self.lr if lr is None else lr
        b1, b2 = self.betas
        self.t += 1
        step_size = lr / (1.0 - b1 ** self.t)
        inv_sqrt_bc2 = 1.0 / math.sqrt(1.0 - b2 ** self.t)
        for name, p in self.params.items():
            g, m, v, tmp = self.grads[name], self.m[name], self.v[name], self._tmp[name]
            if self.decay[name] and self.weight_decay:
                p *= 1.0 - lr * self.weight_decay  # decoupled weight decay
            np.subtract(g, m, out=tmp)
            tmp *= 1.0 - b1
            m += tmp  # m = b1 m + (1 - b1) g, written as m + (1 - b1)(g - m): no temporary
            np.multiply(g, g, out=tmp)
            tmp -= v
            tmp *= 1.0 - b2
            v += tmp  # v = b2 v + (1 - b2) g^2
            np.sqrt(v, out=tmp)
            tmp *= inv_sqrt_bc2
            tmp += self.eps
            np.divide(m, tmp, out=tmp)
            tmp *= step_size
            p -= tmp

    # ---------------------------------------------------------------- saving and resuming
    def state_dict(self) -> dict[str, np.ndarray]:
        """Flat name -> array dict (safetensors-friendly): 'm.<param>', 'v.<param>' and 'step'."""
        state = {f"m.{k}": a for k, a in self.m.items()}
        state.update({f"v.{k}": a for k, a in self.v.items()})
        state["step"] = np.array([self.t], dtype=np.int64)
        return state

    def load_state_dict(self, state: dict[str, np.ndarray]):
        for name in self.params:
            for key, store in ((f"m.{name}", self.m), (f"v.{name}", self.v)):
                if key not in state:
                    raise ValueError(f"optimizer state has no {key!r}")
                if state[key].shape != self.params[name].shape:
                    raise ValueError(f"optimizer state {key!r} has shape {state[key].shape}, expected "
                                     f"{self.params[name].shape}")
                store[name][...] = state[key]
        self.t = int(np.asarray(state["step"]).reshape(-1)[0])


def linear_warmup_decay(step: int, peak_lr: float, warmup_steps: int, total_steps: int) -> float:
    """Learning rate before optimizer step `step` (0-based): 0 -> peak over warmup, then linearly down to 0.

    Identical to transformers.get_linear_schedule_with_warmup.
    """
    if step < warmup_steps:
        return peak_lr * step / max(1, warmup_steps)
    return peak_lr * max(0.0, (total_steps - step) / max(1, total_steps - warmup_steps))


def clip_grad_norm(grads: dict, max_norm: float) -> float:
    """Scale all gradients so their global L2 norm is at most max_norm (as torch.nn.utils.clip_grad_norm_).

    Returns the norm before clipping. A non-finite norm is returned as is and nothing is scaled, so the caller
    can notice and stop.
    """
    total = math.sqrt(sum(float(np.vdot(g, g)) for g in grads.values()))
    if max_norm and math.isfinite(total):
        coef = max_norm / (total + 1e-6)
        if coef < 1.0:
            for g in grads.values():
                g *= coef
    return total
