"""The fine-tuning loop: tokenize once, then epochs of AdamW steps with warmup + linear decay, weight decay and
gradient clipping; after each epoch, evaluate and keep the best checkpoint.

Batches are padded only to their own longest sequence (dynamic padding), so short texts cost little; evaluation
batches are sorted by length for the same reason.

Data parallel (`minibert finetune --procs N`, the default on a machine with 2+ cores; or mpiexec): every rank
holds the whole model and draws the same batches; each takes every N-th example of a batch, and the summed
gradients are the whole batch's (`train_step`). Rank 0 alone evaluates, logs and saves.
"""

from __future__ import annotations

import contextlib
import math
import time
from dataclasses import dataclass

import numpy as np

from minibert._malloc import release_freed_memory
from minibert.finetune.data import Examples
from minibert.finetune.metrics import classification_metrics
from minibert.models.base import forward_only
from minibert.optim import AdamW, clip_grad_norm, linear_warmup_decay
from minibert.parallel import cores_lent, map_batches
from minibert.training.distributed import LocalCommunicator, check_divisible
from minibert.training.sharded import ShardedAdamW

DROPOUT_STREAM = 7  # several ranks: rank r's dropout masks of step s come from default_rng([seed, 7, s, r])

# The eval numbers that may pick the best epoch: classification (accuracy, macro_f1), token classification
# (f1 = entity-level micro F1, token_accuracy), question answering (f1, exact_match) and similarity, a regression
# (spearman, pearson).
SELECT_METRICS = ("accuracy", "macro_f1", "f1", "token_accuracy", "exact_match", "spearman", "pearson")
METRIC_NAMES = {"macro_f1": "macro-F1", "f1": "F1", "token_accuracy": "token accuracy", "exact_match": "exact match",
                "spearman": "Spearman", "pearson": "Pearson"}


@dataclass
class Settings:
    epochs: int = 3
    lr: float = 3e-5
    batch_size: int = 32
    max_length: int = 128
    warmup_ratio: float = 0.1  # share of all steps spent warming up
    weight_decay: float = 0.01
    max_grad_norm: float = 1.0
    seed: int = 0
    select_metric: str = "accuracy"  # which eval number decides the best epoch
    group_by_length: bool = True  # batches of similar lengths: less padding, same examples per epoch
    dropout: float | None = None  # of the body and the head; None: the checkpoint's own
    long_texts: str = "truncate"  # or "windows": a long text is read as overlapping windows (windows.py)
    window_overlap: int = 0  # tokens that neighbouring windows share
    recipe: str = ""  # which recipe chose the values no flag gave (recipe.py)
    recipe_flags: tuple = ()  # the values that flags gave instead
    progress: bool = True

    def validate(self):
        for name in ("epochs", "batch_size", "max_length"):
            if getattr(self, name) < 1:
                raise ValueError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(self, name)}")
        if not self.lr > 0:
            raise ValueError(f"--lr must be positive, got {self.lr}")
        if not 0.0 <= self.warmup_ratio < 1.0:
            raise ValueError(f"--warmup-ratio must be in [0, 1), got {self.warmup_ratio}")
        if self.weight_decay < 0 or self.max_grad_norm < 0:
            raise ValueError("--weight-decay and --max-grad-norm must be >= 0")
        if self.select_metric not in SELECT_METRICS:
            raise ValueError(f"unknown selection metric {self.select_metric!r}; expected {SELECT_METRICS}")


# ---------------------------------------------------------------------------- tokens and batches
def encode_examples(tokenizer, examples: Examples, max_length: int, progress: bool = False) -> list:
    """Token ids and token type ids of every example, truncated to max_length (pairs: longest first)."""
    from tqdm import tqdm

    pairs = examples.text_pairs or [None] * len(examples)
    encoded = []
    for text, pair in tqdm(zip(examples.texts, pairs), total=len(examples), desc="tokenizing", unit="ex",
                           disable=not progress or len(examples) < 2000, leave=False):
        e = tokenizer.encode(text, text_pair=pair, max_length=max_length, truncation=True)
        encoded.append((np.asarray(e.input_ids, dtype=np.int64), np.asarray(e.token_type_ids, dtype=np.int64)))
    return encoded


def collate(encoded: list, indices, pad_id: int, length: int | None = None):
    """Pad the chosen examples to the longest of them (or to `length`): input_ids, token_type_ids,
    attention_mask, each (B, T)."""
    T = length or max(len(encoded[i][0]) for i in indices)
    B = len(indices)
    input_ids = np.full((B, T), pad_id, dtype=np.int64)
    token_type_ids = np.zeros((B, T), dtype=np.int64)
    attention_mask = np.zeros((B, T), dtype=np.int64)
    for row, i in enumerate(indices):
        ids, types = encoded[i]
        input_ids[row, :len(ids)] = ids
        token_type_ids[row, :len(ids)] = types
        attention_mask[row, :len(ids)] = 1
    return input_ids, token_type_ids, attention_mask


def forward_in_batches(model, encoded: list, pad_id: int, batch_size: int = 64, progress: bool = False,
                       desc: str = "evaluating", workers: int | None = None):
    """Yield (example indices, model output) over all examples in eval mode (no dropout), in batches of similar
    length (little padding). Any head: the caller reads the outputs it needs. Up to `workers` batches run at
    once, each on its own thread (minibert/parallel.py; default: parallel.default_workers()), with the same
    numbers as one at a time."""
    from tqdm import tqdm

    order = np.argsort([len(ids) for ids, _ in encoded], kind="stable")  # similar lengths -> little padding
    batches = [order[start:start + batch_size] for start in range(0, len(order), batch_size)]
    with forward_only(model):  # eval mode; no backward follows, so the layers keep no activations
        def run(chosen):  # one batch, inputs by name (a model's inputs after input_ids are keyword-only)
            input_ids, token_type_ids, attention_mask = collate(encoded, chosen, pad_id)
            out = model.forward(input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask)
            # No backward follows: free what the encoder and the head keep for one (the layers' inputs; a tagger's
            # or QA head's (B, T, H) input) now, on the thread that made them, before map_batches hands the worker
            # threads' freed memory back (the last batch's ~20 MB would stay). Another batch's caches dropped by
            # this line are not needed either.
            model._cache = model.bert._cache = None
            return out
        outputs = map_batches(run, batches, workers)
        outputs = tqdm(outputs, total=len(batches), desc=desc, unit="batch", disable=not progress, leave=False)
        for out, chosen in zip(outputs, batches):  # the outputs' generator first: it runs to its end
            yield chosen, out


def predict_logits(model, encoded: list, pad_id: int, batch_size: int = 64, progress: bool = False,
                   desc: str = "evaluating", workers: int | None = None) -> np.ndarray:
    """(N, C) logits of a sequence classifier."""
    logits = np.empty((len(encoded), model.num_labels), dtype=model.dtype)  # (N, C)
    for chosen, out in forward_in_batches(model, encoded, pad_id, batch_size, progress, desc, workers):
        logits[chosen] = out.logits
    return logits


def softmax(logits: np.ndarray) -> np.ndarray:
    z = logits - logits.max(axis=-1, keepdims=True)
    p = np.exp(z)
    return p / p.sum(axis=-1, keepdims=True)


def evaluate(model, encoded, y: np.ndarray, label_names, pad_id, batch_size=64, progress=False,
             desc="evaluating", owner: np.ndarray | None = None) -> dict:
    """Metrics (accuracy, macro-F1, per class, confusion matrix) and the mean cross-entropy. owner: the text each
    of `encoded` belongs to when texts were cut into windows (windows.py): a text's logits are then the mean of
    its windows', and y has one label per text."""
    logits = predict_logits(model, encoded, pad_id, batch_size, progress, desc).astype(np.float64)
    if owner is not None:
        from minibert.finetune.windows import pool_windows
        logits = pool_windows(logits, owner, len(y))
    probs = softmax(logits)
    metrics = classification_metrics(y, logits.argmax(axis=-1), label_names)
    metrics["loss"] = float(-np.log(np.maximum(probs[np.arange(len(y)), y], 1e-300)).mean())
    return metrics


def training_batches(lengths: np.ndarray, batch_size: int, rng, group_by_length: bool) -> list[np.ndarray]:
    """One epoch's batches (arrays of example indices) in random order.

    group_by_length: shuffle, cut into chunks of 8 batches, sort each chunk by length and cut it into batches.
    A batch is then padded to a length close to its examples' own, while which examples meet in a batch still
    changes from epoch to epoch (Hugging Face's group_by_length does the same with larger chunks)."""
    order = rng.permutation(len(lengths))
    if not group_by_length:
        return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
    chunk_size = 8 * batch_size
    batches = []
    for start in range(0, len(order), chunk_size):
        chunk = order[start:start + chunk_size]
        chunk = chunk[np.argsort(lengths[chunk], kind="stable")]
        batches.extend(chunk[i:i + batch_size] for i in range(0, len(chunk), batch_size))
    return [batches[i] for i in rng.permutation(len(batches))]


# ---------------------------------------------------------------------------- the loop
class TrainingDiverged(ValueError):
    """The training loss is not a finite number: raised on every rank at the same step (it is the summed loss)."""


def train_step(model, optimizer, encoded: list, chosen, targets, pad_id: int, lr: float, max_grad_norm: float,
               comm=None, loss_terms=None, count_correct=None) -> tuple[float, int]:
    """One optimizer step on the examples `chosen` of a batch: forward, backward, clipping, AdamW, then the
    gradients zeroed. Returns (the batch's mean loss, its correct predictions: count_correct(out, indices), or 0).

    Several ranks (comm.size = N > 1): each rank takes every N-th example of the batch (a batch sorted by length
    then gives each rank about the same lengths) and scales its loss by its share of the batch's loss terms,
    loss_terms(indices) (default: the number of examples; a tagger counts its labelled tokens). The sum of the
    ranks' gradients is then the gradient of the whole batch's mean loss, as in one process. `optimizer` is a
    ShardedAdamW (training/sharded.py): it sums the gradients and the two numbers over the ranks, clips, and each
    rank updates its share of the weights."""
    size = 1 if comm is None else comm.size
    mine = chosen if size == 1 else chosen[comm.rank::size]
    loss, correct = 0.0, 0
    if len(mine):  # (the last batch of an epoch may have fewer examples than there are ranks)
        # Padded as the whole batch is: a QA head's softmax runs over every position, padding included (as in
        # Hugging Face's), so its loss depends on the padded length. (A batch sorted by length costs no more.)
        inputs = collate(encoded, mine, pad_id, max(len(encoded[i][0]) for i in chosen))
        out = model.forward(inputs[0], token_type_ids=inputs[1], attention_mask=inputs[2],
                            **targets(mine, inputs[0].shape[1]))
        if size == 1 and not math.isfinite(out.loss):
            return out.loss, 0  # (nothing to learn from: the caller stops)
        correct = count_correct(out, mine) if count_correct is not None else 0
        terms = loss_terms or len
        share = 1.0 if size == 1 else terms(mine) / max(terms(chosen), 1)  # this rank's part of the batch's mean
        model.backward(loss_scale=share)
        loss = share * out.loss
    if size == 1:
        clip_grad_norm(model.grads, max_grad_norm)
    else:
        _, sums = optimizer.reduce_and_clip(np.array([loss, correct], dtype=np.float64), max_grad_norm)
        loss, correct = float(sums[0]), int(round(sums[1]))
        if not math.isfinite(loss):  # (the summed loss: every rank returns here alike, and the caller stops)
            model.zero_grad()
            return loss, correct
    optimizer.step(lr=lr)
    model.zero_grad()
    return loss, correct


@contextlib.contextmanager
def evaluation(comm=None):
    """The block around an evaluation between (or after) training steps:
    - the memory that the training steps freed, and that malloc keeps for the next step (keep_freed_memory, as the
      CLI runs), goes back to the system first: the evaluation's batches run on worker threads, which allocate
      from malloc arenas of their own and could not reuse it (MiniLM at batch 32: ~1 GB more at the peak);
    - rank 0 of N runs N inference batches at once (parallel.map_batches): while it alone evaluates, the cores of
      the other ranks, which only wait, are free (under --procs; MPI ranks poll while they wait)."""
    release_freed_memory()
    # (MPI's waiting ranks poll and keep their cores busy: there rank 0 stays on its own threads)
    with cores_lent(comm.size if getattr(comm, "waits_idle", False) else 1):
        yield


def train_classifier(model, train_encoded, y_train, eval_encoded, y_eval, label_names, settings: Settings,
                     pad_id: int, on_best=None, log=print, comm=None, eval_owner=None) -> dict:
    """Fine-tune a sequence classifier in place (see `fit`); eval reports accuracy and macro-F1. y_train has one
    label per training example (a window of a long text has its text's); eval_owner: see `evaluate`."""
    def correct(out, chosen):
        return int((out.logits.argmax(-1) == y_train[chosen]).sum())

    return fit(model, train_encoded, lambda chosen, T: {"labels": y_train[chosen]},
               lambda: evaluate(model, eval_encoded, y_eval, label_names, pad_id, progress=settings.progress,
                                owner=eval_owner),
               settings, pad_id, headline=("accuracy", "macro_f1"), on_best=on_best, log=log, count_correct=correct,
               comm=comm)


def fit(model, train_encoded, targets, evaluate_fn, settings: Settings, pad_id: int, headline, on_best=None,
        log=print, count_correct=None, comm=None, loss_terms=None, percent: bool = False) -> dict:
    """Fine-tune `model` (any head) in place.

    targets(indices, T) gives the forward's target arguments for a batch padded to T tokens (labels, or start and
    end positions); evaluate_fn() gives the eval metrics: a dict with "loss", settings.select_metric and the
    `headline` names logged after each epoch. After each epoch: evaluate; when the selection metric improves,
    remember the parameters and call `on_best(model, epoch, metrics)` (which saves the checkpoint). At the end
    the best parameters are put back into the model. Returns {"history", "best_epoch", "best", "train_time_s"}.
    With count_correct(out, indices), the history also has the training accuracy.

    comm: the ranks of a data-parallel run (training/distributed.py; default: this process alone). Every rank
    calls fit; rank 0 alone evaluates, logs and calls on_best, and only its model gets the best parameters back
    (the others return after the last step, with empty results). loss_terms: see train_step. percent: log the
    `headline` numbers x 100 (QA, as SQuAD reports them; the history keeps fractions).
    """
    from tqdm import tqdm

    settings.validate()
    comm = comm or LocalCommunicator()
    N, B = len(train_encoded), settings.batch_size
    check_divisible(B, comm.size)
    steps_per_epoch = math.ceil(N / B)
    total_steps = steps_per_epoch * settings.epochs
    warmup_steps = int(settings.warmup_ratio * total_steps)
    options = dict(lr=settings.lr, weight_decay=settings.weight_decay)
    optimizer = (ShardedAdamW(model.params, model.grads, comm, **options) if comm.size > 1
                 else AdamW(model.params, model.grads, **options))
    rng = np.random.default_rng([settings.seed, 2])  # batch order; the model's own rng draws dropout masks
    history, best, best_params, best_epoch = [], None, None, None
    step, start = 0, time.perf_counter()
    lengths = np.array([len(ids) for ids, _ in train_encoded])  # (N,)
    for epoch in range(1, settings.epochs + 1):
        model.train()
        batches = training_batches(lengths, B, rng, settings.group_by_length)
        losses, correct = [], 0
        bar = tqdm(batches, desc=f"epoch {epoch}/{settings.epochs}", unit="step",
                   disable=not settings.progress or not comm.is_root)
        for chosen in bar:
            if comm.size > 1:  # each rank its own dropout masks (one stream would repeat them on every rank)
                model.rng = np.random.default_rng([settings.seed, DROPOUT_STREAM, step, comm.rank])
            loss, right = train_step(model, optimizer, train_encoded, chosen, targets, pad_id,
                                     linear_warmup_decay(step, settings.lr, warmup_steps, total_steps),
                                     settings.max_grad_norm, comm, loss_terms, count_correct)
            if not math.isfinite(loss):  # (several ranks: the summed loss, so every rank stops here)
                raise TrainingDiverged(f"epoch {epoch}, step {step}: the training loss is {loss}; lower --lr")
            step += 1
            losses.append(loss)
            correct += right
            bar.set_postfix(loss=f"{np.mean(losses[-20:]):.4f}")
        bar.close()
        comm.check_identical(model.params.buffer, f"the weights after epoch {epoch}")
        if not comm.is_root:
            release_freed_memory()  # (what the steps freed serves nothing while rank 0 evaluates)
            with comm.patient():  # an evaluation may take long: no time limit on this wait
                comm.barrier()  # (until rank 0 has evaluated and saved: then the next epoch starts together)
            continue
        with evaluation(comm):
            metrics = evaluate_fn()
        record = {"epoch": epoch, "train_loss": float(np.mean(losses))}
        if count_correct is not None:
            record["train_accuracy"] = correct / N
        record["eval_loss"] = metrics["loss"]
        record.update({f"eval_{name}": metrics[name] for name in headline})
        record["elapsed_s"] = round(time.perf_counter() - start, 1)
        history.append(record)
        score = metrics[settings.select_metric]
        improved = best is None or score > best[settings.select_metric] or (
            score == best[settings.select_metric] and metrics["loss"] < best["loss"])
        shown = ", ".join(f"{METRIC_NAMES.get(name, name)} " + (f"{100 * metrics[name]:.1f}" if percent else
                                                                 f"{metrics[name]:.4f}") for name in headline)
        log(f"epoch {epoch}: train loss {record['train_loss']:.4f}, eval loss {metrics['loss']:.4f}, {shown}"
            f"{' (best so far)' if improved else ''}")
        if improved:
            best, best_epoch = metrics, epoch
            best_params = {k: p.copy() for k, p in model.params.items()}
            if on_best is not None:
                on_best(model, epoch, metrics)
        if comm.size > 1:
            comm.barrier()
    if best_params is not None:  # (rank 0)
        for name, p in best_params.items():
            model.params[name][...] = p
    return {"history": history, "best_epoch": best_epoch, "best": best,
            "train_time_s": round(time.perf_counter() - start, 1)}
