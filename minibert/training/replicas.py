"""Data parallelism inside one process: each batch is split by rows over N threads, each running the forward and
backward of its own replica of the model, with a single-threaded BLAS.

Why threads and not a second BLAS thread: a mini step is many small matmuls (1,024 x 192 x 192) and a few
hundred elementwise passes, and a second BLAS/elementwise thread speeds it up only ~1.3x, while two halves of
the batch computed side by side on one core each come close to 2x for the same work. NumPy releases the GIL
inside BLAS and its ufuncs, so Python threads run them truly in parallel; only the Python between two NumPy
calls is serialised. (MPI ranks, minibert.training.distributed, do the same across processes and machines.)

Each replica (`Model.replica`) shares the parameters, so the optimizer steps all of them at once, and keeps its
own gradients, caches and dropout stream. Replica k gets rows k of the batch; its losses are means over ITS
masked tokens (and pairs), so its backward is scaled by its share of the batch's masked tokens (pairs): the sum
of the replicas' gradients is then the gradient of the whole batch's loss, equal to one model's up to the
order of float additions. The batch is drawn and masked whole before it is split, so N replicas see exactly
the data one model would.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from minibert.layers.blas_threads import available as blas_control_available
from minibert.layers.blas_threads import blas_threads
from minibert.layers.loss import IGNORE_INDEX
from minibert.layers.threads import for_row_blocks, get_num_threads, this_thread_only


def default_replicas() -> int:
    """One replica per thread the environment allows (OPENBLAS_NUM_THREADS / OMP_NUM_THREADS, else the cores),
    and 1 where the BLAS thread count cannot be controlled (it would oversubscribe the cores)."""
    return get_num_threads() if blas_control_available() else 1


@dataclass
class BatchStats:
    """What one batch gave: losses (means over the batch) and the counts behind the accuracies."""
    loss: float = 0.0
    mlm_loss: float = 0.0
    nsp_loss: float = 0.0
    correct: int = 0       # masked tokens predicted right
    masked: int = 0        # masked tokens
    nsp_correct: int = 0
    pairs: int = 0
    tokens: int = 0        # non-padding tokens


class Replicas:
    """`model` and n - 1 replicas of it, with n - 1 helper threads (n = 1: the model alone, no threads)."""

    def __init__(self, model, n: int = 1):
        if n < 1:
            raise ValueError(f"the number of replicas must be >= 1, got {n}")
        self.model = model
        self.models = [model] + [model.replica(i) for i in range(1, n)]
        self._pool = ThreadPoolExecutor(max_workers=n - 1, thread_name_prefix="minibert-replica") if n > 1 else None

    @property
    def n(self) -> int:
        return len(self.models)

    # ------------------------------------------------------------------ running parts of a batch
    def _run(self, fn, parts):
        """fn(model_k, part_k) for every part, part k on replica k, all at once; results in order."""
        if len(parts) == 1:
            return [fn(self.models[0], parts[0])]

        def alone(model, part):
            with this_thread_only():  # each thread is one of n: its elementwise work stays on it
                return fn(model, part)
        with blas_threads(1):
            futures = [self._pool.submit(alone, m, p) for m, p in zip(self.models[1:], parts[1:])]
            try:
                results = [alone(self.models[0], parts[0])]
            finally:
                results += [f.result() for f in futures]  # waits for all; re-raises a replica's error here
        return results

    def _split(self, batch: dict) -> list[np.ndarray]:
        """Row indices of each replica's part: contiguous, as equal as can be, none empty."""
        B = len(batch["input_ids"])
        return [rows for rows in np.array_split(np.arange(B), min(self.n, B)) if len(rows)]

    def forward_backward(self, batch: dict, use_nsp: bool, loss_scale: float = 1.0, backward: bool = True
                         ) -> BatchStats:
        """Forward (and backward, adding loss_scale x the batch's gradient into `model.grads`) of one batch
        with input_ids, token_type_ids, attention_mask, labels (and next_sentence_label)."""
        labels = batch["labels"]
        total_masked = int((labels != IGNORE_INDEX).sum())
        total_pairs = len(labels)

        def work(model, rows):
            part = {k: v[rows] for k, v in batch.items()} if len(rows) < total_pairs else batch
            out = model.forward(part["input_ids"], part["token_type_ids"], part["attention_mask"],
                                labels=part["labels"],
                                next_sentence_label=part["next_sentence_label"] if use_nsp else None)
            masked = len(out.masked_positions)
            if backward:  # weights: this part's share of the masked tokens / of the pairs
                model.backward(loss_scale * masked / max(1, total_masked),
                               nsp_loss_scale=loss_scale * len(rows) / total_pairs)
            return _stats(out, part, use_nsp)

        results = self._run(work, self._split(batch))
        if backward:
            for replica in self.models[1:]:
                _add_and_clear(self.model.grads, replica.grads)
        return _combine(results, total_masked, total_pairs)

    def evaluate_batch(self, batch: dict, use_nsp: bool) -> BatchStats:
        return self.forward_backward(batch, use_nsp, backward=False)

    # ------------------------------------------------------------------ modes, state
    def train(self, mode: bool = True):
        for m in self.models:
            m.train(mode)

    def rng_states(self) -> list:
        return [m.rng.bit_generator.state for m in self.models[1:]]

    def load_rng_states(self, states) -> None:
        """Restore the replicas' dropout streams (as many as both runs have)."""
        for m, state in zip(self.models[1:], states or []):
            m.rng.bit_generator.state = state

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None


def _stats(out, part: dict, use_nsp: bool) -> BatchStats:
    targets = part["labels"].reshape(-1)[out.masked_positions]  # (M,)
    s = BatchStats(mlm_loss=float(out.mlm_loss), correct=int((out.prediction_logits.argmax(axis=-1) == targets).sum()),
                   masked=len(targets), tokens=int(part["attention_mask"].sum()))
    if use_nsp:
        nsl = part["next_sentence_label"]
        s.nsp_loss = float(out.nsp_loss)
        s.nsp_correct, s.pairs = int((out.seq_relationship_logits.argmax(axis=-1) == nsl).sum()), len(nsl)
    return s


def _combine(parts: list[BatchStats], total_masked: int, total_pairs: int) -> BatchStats:
    """The whole batch's stats from its parts': losses weighted by each part's share of masked tokens / pairs."""
    s = BatchStats()
    for p in parts:
        s.mlm_loss += p.mlm_loss * p.masked / max(1, total_masked)
        s.nsp_loss += p.nsp_loss * p.pairs / max(1, total_pairs)
        s.correct, s.masked, s.tokens = s.correct + p.correct, s.masked + p.masked, s.tokens + p.tokens
        s.nsp_correct, s.pairs = s.nsp_correct + p.nsp_correct, s.pairs + p.pairs
    s.loss = s.mlm_loss + s.nsp_loss
    return s


def _add_and_clear(into, grads) -> None:
    """into += grads, then grads = 0 (ready for the replica's next batch); on the elementwise threads."""
    if into.intact() and grads.intact() and into.same_layout(grads):
        a, b = into.buffer, grads.buffer  # (P,) each

        def block(s):
            a[s] += b[s]
            b[s] = 0.0
        for_row_blocks(block, a.size, 1)
        return
    for name, g in grads.items():  # an entry was replaced: one array at a time
        into[name] += g
        g.fill(0.0)


