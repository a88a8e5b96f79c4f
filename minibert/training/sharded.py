"""AdamW split over data-parallel ranks (ZeRO stage 1): each rank updates 1/N of the weights.

Without it, every rank of a data-parallel run (training/distributed.py) receives the whole summed gradient,
clips all of it and runs AdamW over all 3M weights, the same work N times, and keeps all of AdamW's moments.
Split instead, per step:

    grads  (n,)  each rank's own gradient of its rows of the batch
      reduce_scatter_sum_   rank r receives only the sum of its columns bounds[r]:bounds[r + 1]
    norm   the squared norm of each NORM_BLOCK block of a rank's columns, added over the ranks together
           with the step's loss sums (one small allreduce): the global norm, bit for bit the one-buffer value
      clip   rank r scales its columns
      AdamW  rank r updates its columns of the weights, with moments m, v for those columns only
      allgather_            every rank gets every rank's updated columns

Every weight is computed by exactly one rank and then copied to the others, so the ranks hold identical
weights. Under --procs the summed gradient is also the same bits as the whole-buffer allreduce gives (the same
additions in rank order), so the weights are bit for bit those of the unsplit step
(tests/training/test_sharded.py, also under mpiexec with 2 ranks); MPI with 3 or more ranks may add the ranks'
gradients in another order in its reduce-scatter than in its allreduce, so there the two paths agree to float32
rounding. A rank does 1/N of the clipping and AdamW work and keeps 1/N of the moments (mini: 12 MB less per
rank at N = 2). Checkpoints hold the whole moments, gathered on rank 0, so a run can
resume on any number of ranks.
"""

from __future__ import annotations

import math

import numpy as np

from minibert.optim import NORM_BLOCK, AdamW, block_squares, clip_coefficient


def shard_bounds(n: int, size: int, align: int = NORM_BLOCK) -> list[int]:
    """Where each of `size` ranks' columns of an n-entry buffer start and end: bounds[r]:bounds[r + 1], as equal
    as whole blocks of `align` entries allow (so every norm block belongs to one rank)."""
    blocks = -(-n // align)
    return [min(n, (r * blocks // size) * align) for r in range(size)] + [n]


class ShardedAdamW:
    """AdamW over a model's flat `params` / `grads` (FlatArrays), its work and moments split over `comm`'s ranks.

    Per step: `norm, sums = opt.reduce_and_clip(sums, max_norm)` (after the backward), then `opt.step(lr)`.
    """

    def __init__(self, params, grads, comm, **adamw_options):
        self.params, self.grads, self.comm = params, grads, comm
        self.bounds = shard_bounds(params.buffer.size, comm.size)
        self.lo, self.hi = self.bounds[comm.rank], self.bounds[comm.rank + 1]
        self.adamw = AdamW(params, grads, shard=slice(self.lo, self.hi), **adamw_options)
        comm.keep_in_shared_row(grads)  # --procs: the gradients live where the sum reads them (training/procs.py)
        comm.share_weights(params)  # --procs: one copy of the weights for all ranks, each updating its columns

    @property
    def t(self) -> int:
        return self.adamw.t

    def reduce_and_clip(self, sums: np.ndarray, max_norm: float) -> tuple[float, np.ndarray]:
        """Sum this rank's columns of the gradient over the ranks, add `sums` (float64, e.g. the step's losses)
        over the ranks, and clip: (the global gradient norm before clipping, the summed `sums`). A non-finite
        norm is returned and nothing is scaled, as clip_grad_norm does."""
        buf = self.grads.buffer
        self.comm.reduce_scatter_sum_(buf, self.bounds)
        squares = np.array(block_squares(buf, self.lo, self.hi))  # this rank's blocks; 0.0 for the others'
        both = self.comm.allreduce_sum_(np.concatenate([np.asarray(sums, dtype=np.float64), squares]))
        sums, squares = both[:len(sums)], both[len(sums):]
        total = math.sqrt(sum(squares.tolist()))  # in block order, as clip_grad_norm adds them
        coef = clip_coefficient(total, max_norm)
        if coef is not None:
            buf[self.lo:self.hi] *= coef
        return total, sums

    def step(self, lr: float | None = None) -> None:
        """AdamW on this rank's columns, then every rank's updated columns to every rank. Afterwards `grads`
        holds the summed, clipped gradient in this rank's columns only (elsewhere: this rank's own part, or under
        --procs what the exchange left there); the next step starts by zeroing it."""
        self.adamw.step(lr)
        self.comm.allgather_(self.params.buffer, self.bounds)

    def state_dict(self) -> dict[str, np.ndarray] | None:
        """The whole optimizer state (as AdamW.state_dict) on rank 0, gathered from the ranks; None on the
        others. Every rank must call it (a collective), and then wait at a barrier (`comm.barrier()`) until rank
        0 has used the arrays (saved them): under --procs they are views of shared memory, the rows where the
        other ranks' next backward writes its gradients."""
        # (--procs: into two rows of the shared area of the gradient sum, which rank 0 reads without copying)
        m = self.comm.gather_to_root(self.adamw.m, self.bounds, row=0)
        v = self.comm.gather_to_root(self.adamw.v, self.bounds, row=min(1, self.comm.size - 1))
        if not self.comm.is_root:
            return None
        state = {}
        for key, whole in (("m", m), ("v", v)):
            state.update({f"{key}.{name}": whole[self.params.slices[name]].reshape(self.params.shapes[name])
                          for name in self.params})  # in the model's order, as AdamW.state_dict
        state["step"] = np.array([self.adamw.t], dtype=np.int64)
        return state

    def load_state_dict(self, state: dict[str, np.ndarray]) -> None:
        """Whole moments (a checkpoint's, from any number of ranks): this rank keeps its columns."""
        self.adamw.load_state_dict(state)

