"""AdamW with decoupled weight decay, the linear warmup/decay schedule and global-norm gradient clipping.

The update follows torch.optim.AdamW exactly (tests compare ten steps against it):
    p  <- p * (1 - lr * wd)                               decoupled weight decay (skipped for biases, LayerNorm)
    m  <- b1 m + (1 - b1) g ;  v <- b2 v + (1 - b2) g^2   moment estimates
    p  <- p - lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping

import numpy as np

from minibert.flat import FlatArrays


# Entries per block of the flat AdamW update (512 KiB of float32 per buffer). Measured on the shared 2-core EPYC
# (load 5-7) with mini's 3.0M parameters: blocks of 2^17 or 2^18 ~10 ms per step, the whole buffers in one go
# ~17 ms, the per-tensor loop ~16 ms (most tensors are small enough to stay in cache anyway). Splitting the
# blocks over two threads did not win there (6.6 vs 6.3 ms): the update is bound by memory, not by one core.
BLOCK = 1 << 17


def default_no_decay(name: str) -> bool:
    """BERT does not decay biases or LayerNorm weights (DistilBERT calls some of them *_layer_norm)."""
    return name.endswith("bias") or "LayerNorm" in name or "layer_norm" in name


class AdamW:
    """AdamW (torch.optim.AdamW's update, see above) over a model's weights.

        opt = AdamW(model.params, model.grads, lr=5e-4, weight_decay=0.01)
        for batch in batches:
            model.zero_grad()          # the backward ADDS into model.grads: zero them first, every step
            model.forward(...); model.backward()
            opt.step()                 # updates model.params in place from model.grads

    `params` and `grads` are dicts of name -> NumPy array with the same names and shapes (a model's
    `model.params` and `model.grads`, in that order; not lists of arrays as torch takes). `params` may be a subset
    of the model's weights (the others stay frozen). Biases and LayerNorm weights get no weight decay
    (`no_decay(name)` decides). The optimizer keeps references to both dicts: the arrays it updates are the
    model's own.

    When both are `FlatArrays` of one layout (a model's), the update runs over the whole flat buffers, block by
    block; otherwise (plain dicts, or an entry since replaced) one tensor at a time. Both paths do the same
    operations in the same order: the results are identical."""

    def __init__(self, params: dict, grads: dict, lr=1e-4, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.01,
                 no_decay=default_no_decay, shard: slice | None = None):
        """shard: update only these entries of the flat buffers and keep moments for them alone (ZeRO stage 1
        over data-parallel ranks, training/sharded.py); the other entries are left as they are."""
        self.flat = _check_arrays(params, grads)  # True: a model's flat buffers of one layout
        for name, value in (("lr", lr), ("eps", eps), ("weight_decay", weight_decay)):
            _check_number(value, name, "AdamW")
        if lr < 0 or eps < 0 or weight_decay < 0:
            raise ValueError(f"AdamW: lr, eps and weight_decay must be >= 0, got {lr}, {eps}, {weight_decay}")
        if isinstance(betas, (str, bytes)) or not (hasattr(betas, "__len__") and len(betas) == 2 and all(
                isinstance(b, numbers.Real) and not isinstance(b, bool) for b in betas)):
            raise TypeError(f"AdamW: betas must be two numbers (beta1, beta2), got {betas!r}")
        if not all(0.0 <= b < 1.0 for b in betas):
            raise ValueError(f"AdamW: betas must be in [0, 1), got {betas}")
        if not callable(no_decay):
            raise TypeError(f"AdamW: no_decay must be a function name -> bool (True: no weight decay), got "
                            f"{type(no_decay).__name__}")
        self.params, self.grads = params, grads
        self.lr, self.betas, self.eps, self.weight_decay = lr, tuple(betas), eps, weight_decay
        self.decay = {name: (not no_decay(name)) for name in params}
        if shard is not None and not self.flat:
            raise ValueError("AdamW: a shard needs params and grads in flat buffers of one layout (minibert/flat.py)")
        if shard is not None:  # moments for the shard only: 1-D arrays, entry i is the buffer's entry shard.start + i
            start, stop, stride = shard.indices(params.buffer.size)
            if stride != 1 or start > stop:
                raise ValueError(f"AdamW: a shard must be a contiguous range of the buffer, got {shard}")
            shard = slice(start, stop)
            self.m, self.v = (np.zeros(stop - start, dtype=params.buffer.dtype) for _ in range(2))
        elif self.flat:  # moments in the same layout as the parameters: the update runs over equal buffers
            self.m, self.v = params.zeros_like(), params.zeros_like()
        if self.flat:
            self._tmp = np.empty(min(BLOCK, params.buffer.size), dtype=params.buffer.dtype)  # scratch, one block
            self._decay_runs = _runs(params.slices[name] for name in params.slices if self.decay[name])
        else:
            self.m = {name: np.zeros_like(p) for name, p in params.items()}
            self.v = {name: np.zeros_like(p) for name, p in params.items()}
            self._tmp = {name: np.empty_like(p) for name, p in params.items()}  # scratch: no fresh allocations
        self.shard = shard
        self.t = 0  # steps taken

    def step(self, lr: float | None = None):
        """One AdamW update of every array in `params`, in place, from the gradients in `grads` as they are now:
        decoupled weight decay (p *= 1 - lr * weight_decay, not for no_decay names), then the moment estimates
        and the bias-corrected Adam step. `lr`: this step's learning rate (a schedule's; default: the one given
        at construction). The gradients are read, never changed: zero them before the next backward
        (model.zero_grad()), which adds into them."""
        if lr is not None:
            _check_number(lr, "lr", "AdamW.step")
        lr = self.lr if lr is None else lr
        b1, b2 = self.betas
        self.t += 1
        coefs = (b1, b2, lr / (1.0 - b1 ** self.t), 1.0 / math.sqrt(1.0 - b2 ** self.t), self.eps)
        shrink = 1.0 - lr * self.weight_decay  # decoupled weight decay
        if self.flat and self.params.intact() and self.grads.intact():
            self._flat_step(shrink, coefs)
            return
        if self.shard is not None:
            raise RuntimeError("AdamW: a sharded optimizer's parameters were replaced (no longer views of one buffer)")
        for name, p in self.params.items():
            if self.decay[name] and self.weight_decay:
                p *= shrink
            tmp = self._tmp[name] if isinstance(self._tmp, dict) else np.empty_like(p)  # a replaced entry: rare
            _adam_update(p, self.grads[name], self.m[name], self.v[name], tmp, *coefs)

    def _flat_step(self, shrink, coefs):
        """The update over the whole flat buffers, one cache-sized block at a time: the ~13 operations of a
        block then reuse data in cache instead of each streaming all the buffers through memory."""
        p, g = self.params.buffer, self.grads.buffer
        start, stop, _ = (self.shard if self.shard is not None else slice(None)).indices(p.size)
        m, v = (self.m, self.v) if self.shard is not None else (self.m.buffer, self.v.buffer)  # entry i: p[start + i]
        for i in range(start, stop, BLOCK):
            j = min(i + BLOCK, stop)
            if self.weight_decay:
                for run in self._decay_runs:  # one run when the no-decay arrays are one segment (a model's)
                    lo, hi = max(i, run.start), min(j, run.stop)
                    if lo < hi:
                        p[lo:hi] *= shrink
            _adam_update(p[i:j], g[i:j], m[i - start:j - start], v[i - start:j - start], self._tmp[:j - i], *coefs)

    # ---------------------------------------------------------------- saving and resuming
    def state_dict(self) -> dict[str, np.ndarray]:
        """Flat name -> array dict (safetensors-friendly): 'm.<param>', 'v.<param>' and 'step'. (A shard holds
        part of the moments: training/sharded.py gathers them from the ranks.)"""
        if self.shard is not None:
            raise RuntimeError("AdamW.state_dict: this optimizer holds one shard of the moments; "
                               "ShardedAdamW.state_dict gathers the whole state")
        state = {f"m.{k}": a for k, a in self.m.items()}
        state.update({f"v.{k}": a for k, a in self.v.items()})
        state["step"] = np.array([self.t], dtype=np.int64)
        return state

    def load_state_dict(self, state: dict[str, np.ndarray]):
        """Moments and step count from `state_dict()`'s arrays (whole ones; a shard takes its part of them)."""
        for name in self.params:
            for key, store in ((f"m.{name}", self.m), (f"v.{name}", self.v)):
                if key not in state:
                    raise ValueError(f"optimizer state has no {key!r}")
                if state[key].shape != self.params[name].shape:
                    raise ValueError(f"optimizer state {key!r} has shape {state[key].shape}, expected "
                                     f"{self.params[name].shape}")
                if self.shard is None:
                    store[name][...] = state[key]
                    continue
                where, start = self.params.slices[name], self.shard.start  # the entry's place in the buffer
                lo, hi = max(where.start, start), min(where.stop, self.shard.stop)
                if lo < hi:
                    store[lo - start:hi - start] = np.asarray(state[key]).reshape(-1)[lo - where.start:hi - where.start]
        self.t = int(np.asarray(state["step"]).reshape(-1)[0])


def _check_number(value, name: str, where: str) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{where}: {name} must be a number, got {value!r}")


def _check_arrays(params, grads) -> bool:
    """params and grads: dicts of name -> floating-point array, every name of params in grads with its shape, and
    not a model's two dicts swapped (one line, naming the argument, otherwise). Returns _flat_pair(params, grads)."""
    for arg, value in (("params", params), ("grads", grads)):
        if not isinstance(value, Mapping):
            raise TypeError(f"AdamW: {arg} must be a dict of name -> array, e.g. model.{arg} (got a "
                            f"{type(value).__name__}); AdamW(model.params, model.grads, lr=...)")
        for name, a in value.items():
            if not (isinstance(a, np.ndarray) and np.issubdtype(a.dtype, np.floating)):
                got = f"a {a.dtype} array" if isinstance(a, np.ndarray) else f"a {type(a).__name__}"
                raise TypeError(f"AdamW: {arg}[{name!r}] must be a floating-point NumPy array, got {got}")
    for name, p in params.items():
        if name not in grads:
            raise ValueError(f"AdamW: grads has no entry {name!r} of params (they must have the same names: "
                             f"model.params and model.grads)")
        if grads[name].shape != p.shape:
            raise ValueError(f"AdamW: grads[{name!r}] has shape {grads[name].shape} but params[{name!r}] has shape "
                             f"{p.shape}")
    # Swapped (AdamW(model.grads, model.params)): a model's weights are never all zero (LayerNorm weights start
    # at 1), its gradients are until the first backward. Only checked for a model's flat buffers: a plain dict of
    # zero weights (a toy problem) is legitimate.
    flat = _flat_pair(params, grads)
    if flat and params.buffer.size and not params.buffer.any() and grads.buffer.any():
        raise ValueError("AdamW: params are all zero and grads are not: swapped? The weights come first: "
                         "AdamW(model.params, model.grads, lr=...)")
    return flat


def _adam_update(p, g, m, v, tmp, b1, b2, step_size, inv_sqrt_bc2, eps):
    """The moment estimates and the parameter update, in place; `tmp` is scratch of p's shape."""
    np.subtract(g, m, out=tmp)
    tmp *= 1.0 - b1
    m += tmp  # m = b1 m + (1 - b1) g, written as m + (1 - b1)(g - m): no temporary
    np.multiply(g, g, out=tmp)
    tmp -= v
    tmp *= 1.0 - b2
    v += tmp  # v = b2 v + (1 - b2) g^2
    np.sqrt(v, out=tmp)
    tmp *= inv_sqrt_bc2
    tmp += eps
    np.divide(m, tmp, out=tmp)
    tmp *= step_size
    p -= tmp


def _flat_pair(params, grads) -> bool:
    """Whether params and grads are flat buffers of one layout and dtype (a model's `params` and `grads`)."""
    return (isinstance(params, FlatArrays) and params.same_layout(grads) and params.intact() and grads.intact()
            and params.buffer.dtype == grads.buffer.dtype)


def _runs(slices) -> list[slice]:
    """Merge slices that touch into maximal contiguous runs."""
    runs = []
    for s in sorted(slices, key=lambda s: s.start):
        if runs and runs[-1].stop == s.start:
            runs[-1] = slice(runs[-1].start, s.stop)
        else:
            runs.append(s)
    return runs


def linear_warmup_decay(step: int, peak_lr: float, warmup_steps: int, total_steps: int) -> float:
    """Learning rate before optimizer step `step` (0-based): 0 -> peak over warmup, then linearly down to 0.

    Identical to transformers.get_linear_schedule_with_warmup.
    """
    if step < warmup_steps:
        return peak_lr * step / max(1, warmup_steps)
    return peak_lr * max(0.0, (total_steps - step) / max(1, total_steps - warmup_steps))


NORM_BLOCK = 1 << 16  # entries per float32 dot product in the global gradient norm


def clip_grad_norm(grads: dict, max_norm: float) -> float:
    """Scale all gradients so their global L2 norm is at most max_norm (as torch.nn.utils.clip_grad_norm_).

    Returns the norm before clipping. A non-finite norm is returned as is and nothing is scaled, so the caller
    can notice and stop.
    """
    if isinstance(grads, FlatArrays) and grads.intact():
        total = math.sqrt(sum(block_squares(grads.buffer)))
        arrays = [grads.buffer]
    else:
        total = math.sqrt(sum(float(np.vdot(g, g)) for g in grads.values()))
        arrays = list(grads.values())
    coef = clip_coefficient(total, max_norm)
    if coef is not None:
        for g in arrays:
            g *= coef
    return total


def block_squares(buf: np.ndarray, start: int = 0, stop: int | None = None) -> list[float]:
    """Squared L2 norm of each NORM_BLOCK block of a flat buffer, in float64 (one float32 dot product over
    millions of entries would lose precision); blocks outside [start, stop) count 0.0. The global norm is the
    square root of their sum in block order: ranks that each fill in their own blocks (start, stop multiples of
    NORM_BLOCK) and add the lists get exactly the norm of the whole buffer."""
    stop = buf.size if stop is None else stop
    return [float(np.vdot(buf[i:i + NORM_BLOCK], buf[i:i + NORM_BLOCK])) if start <= i < stop else 0.0
            for i in range(0, buf.size, NORM_BLOCK)]


def clip_coefficient(total: float, max_norm: float) -> float | None:
    """What to multiply the gradients by so their norm `total` is at most max_norm; None: leave them (no clipping
    asked, already small enough, or a non-finite norm that the caller reports)."""
    if max_norm and math.isfinite(total):
        coef = max_norm / (total + 1e-6)
        if coef < 1.0:
            return coef
    return None
