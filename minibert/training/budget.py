"""How many steps a run takes, and its learning rate: given (--steps), or as many steps as fit in a time budget
(--minutes).

The learning rate warms up linearly, then decays linearly to zero at the last step, so with a time budget the
number of steps must be known early. It is planned from a few timed steps before training starts
(`measure_step_seconds`), then corrected from the real step times: at the end of warmup and every tenth of
the run after that, until 90% of it is done. A shared machine changes speed (other programs start and stop);
each correction lets the run use its budget anyway. Correcting never makes the learning rate jump: from the
step where the plan changes, it decays in a straight line from its current value to zero at the new last step.

With --steps nothing is timed and the schedule is exactly `minibert.optim.linear_warmup_decay`.
The plan is saved in every checkpoint; a resumed run keeps it (and makes no further corrections).
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from statistics import median

from minibert._malloc import release_freed_memory
from minibert._plural import counted
from minibert.optim import AdamW, clip_grad_norm
from minibert.training.sharded import shard_bounds

EVALUATIONS_PER_RUN = 10
CHECKPOINTS_PER_RUN = 4
REPLAN_MIN_STEPS = 10      # steps between corrections, at least
REPLAN_UNTIL = 0.9         # no corrections in the last 10% of the run
BUDGET_OVERRUN = 1.15      # with --minutes, stop early if training takes this much longer than planned


@dataclass
class Plan:
    total_steps: int
    warmup_steps: int
    eval_every: int
    save_every: int
    peak_lr: float
    decay_from_step: int       # the learning rate falls in a straight line from (decay_from_step, decay_from_lr)
    decay_from_lr: float       # ... to 0 at total_steps
    next_replan: int | None    # the step after which the total is corrected from measured times (None: never)

    def lr(self, step: int) -> float:
        """Learning rate for optimizer step `step` (0-based)."""
        if step < self.warmup_steps:
            return self.peak_lr * step / max(1, self.warmup_steps)
        steps_left = max(0.0, (self.total_steps - step) / max(1, self.total_steps - self.decay_from_step))
        return self.decay_from_lr * steps_left

    def state_dict(self) -> dict:
        return asdict(self)


class Budget:
    """The clock of a run while it trains: its elapsed time (all sessions), with --minutes the step times that
    correct the plan, and whether a fresh run runs so far over its time (BUDGET_OVERRUN) that it stops
    early (a resumed session just finishes its steps)."""

    def __init__(self, settings, resumed: bool, eval_seconds: float | None, elapsed_before: float = 0.0):
        self.seconds = settings.minutes * 60 if settings.steps is None and not resumed else math.inf
        self.eval_seconds, self.elapsed_before = eval_seconds, elapsed_before
        self.start = time.perf_counter()
        self.step_times = []  # since the last correction

    def elapsed(self) -> float:
        """Wall seconds of training (all sessions of the run), for metrics.jsonl."""
        return round(self.elapsed_before + time.perf_counter() - self.start, 3)

    def over(self) -> bool:
        return time.perf_counter() - self.start > self.seconds * BUDGET_OVERRUN

    def step_took(self, seconds: float, first_of_session: bool) -> None:
        if not first_of_session:  # the first step of a session pays for first-time allocations
            self.step_times.append(seconds)

    def replan(self, plan: Plan, done: int, settings, comm) -> tuple[Plan, str | None]:
        """(the plan corrected from the recent step times, a line to print when the total changed by more than
        2%); rank 0's timings decide for all ranks."""
        old_total = plan.total_steps
        # The mean, not the median: the occasional slow step (a busy machine) costs time all the same.
        mean_step = sum(self.step_times) / len(self.step_times)
        plan = replan(plan, done, mean_step, self.seconds - (time.perf_counter() - self.start), self.eval_seconds,
                      settings)
        plan = Plan(**comm.broadcast(plan.state_dict()))
        self.step_times = []
        if abs(plan.total_steps - old_total) <= 0.02 * old_total:
            return plan, None
        return plan, (f"step {done:>6,}  measured {mean_step:.2f} s per step: {counted(plan.total_steps, 'step')} "
                      f"fit in {counted(settings.minutes, 'minute')} (planned {old_total:,})")


def make_plan(total_steps: int, settings, timed: bool) -> Plan:
    warmup = round(settings.warmup * total_steps)
    eval_every, save_every = _intervals(total_steps, settings)
    plan = Plan(total_steps, warmup, eval_every, save_every, settings.lr, warmup, settings.lr, None)
    first = max(warmup, REPLAN_MIN_STEPS)  # the first correction comes at the end of warmup
    if timed and first < REPLAN_UNTIL * total_steps:
        plan.next_replan = first
    return plan


def replan(plan: Plan, done: int, step_seconds: float, seconds_left: float, eval_seconds: float, settings) -> Plan:
    """The plan after `done` steps, when `seconds_left` of the budget remain and a step takes `step_seconds`."""
    evals_left = math.ceil((plan.total_steps - done) / plan.eval_every)
    total = done + max(1, int((seconds_left - evals_left * eval_seconds) / step_seconds))
    decay_from_step, decay_from_lr = plan.decay_from_step, plan.decay_from_lr
    if done >= plan.warmup_steps:  # decay from where the learning rate is now: no jump
        decay_from_step, decay_from_lr = done, plan.lr(done)
    eval_every, save_every = _intervals(total, settings)
    next_replan = done + max(REPLAN_MIN_STEPS, total // 10)
    return Plan(total, plan.warmup_steps, eval_every, save_every, plan.peak_lr, decay_from_step, decay_from_lr,
                next_replan if next_replan < REPLAN_UNTIL * total else None)


def steps_that_fit(seconds: float, step_seconds: float, eval_seconds: float) -> int:
    """Steps that fit in `seconds`, leaving time for the evaluations of the run."""
    return max(1, int((seconds - EVALUATIONS_PER_RUN * eval_seconds) / step_seconds))


def _intervals(total_steps: int, settings) -> tuple[int, int]:
    """Evaluation and checkpoint intervals: about 10 and 4 per run (the last ones fall on the final step)."""
    eval_every = settings.eval_every or max(1, math.ceil(total_steps / EVALUATIONS_PER_RUN))
    save_every = settings.save_every or max(1, math.ceil(total_steps / CHECKPOINTS_PER_RUN))
    return eval_every, save_every


def measure_step_seconds(model, batch: dict, use_nsp: bool, repeats: int = 3, ranks: int = 1) -> float:
    """Seconds one optimizer step takes on this machine (forward + backward + clipping + AdamW), measured without
    changing the run: the dropout generator is restored and AdamW works on copies of the parameters. With
    `ranks` > 1, AdamW runs on one rank's share of the weights, as training/sharded.py splits it (the sums
    between the ranks are not in the probe; the re-plan from real step times accounts for them)."""
    rng_state = model.rng.bit_generator.state
    nsl = batch["next_sentence_label"] if use_nsp else None
    shard = slice(0, shard_bounds(model.params.buffer.size, ranks)[1]) if ranks > 1 else None
    probe_optimizer = AdamW(model.params.clone(), model.grads, lr=0.0, shard=shard)  # flat, as the real optimizer
    times = []
    for _ in range(repeats + 1):  # the first pass pays for first-time allocations: not counted
        t = time.perf_counter()
        model.zero_grad()
        model.forward(batch["input_ids"], token_type_ids=batch["token_type_ids"],
                      attention_mask=batch["attention_mask"], labels=batch["labels"], next_sentence_label=nsl)
        model.backward()
        clip_grad_norm(model.grads, 1.0)
        probe_optimizer.step()
        times.append(time.perf_counter() - t)
    model.zero_grad()
    model.rng.bit_generator.state = rng_state
    # The probe's copy of the weights and its moments (24 MB for mini) are freed here; malloc would keep them in the
    # process for good (minibert/_malloc.py), so they are handed back (docs/memory.md).
    del probe_optimizer
    release_freed_memory()
    return median(times[1:])
