"""Held-out evaluation with fixed examples and fixed masks, so numbers from different steps (and runs with the
same data) are comparable: the only thing that changes between two evaluations is the model."""

from __future__ import annotations

import math

import numpy as np

from minibert.data.examples import collate, make_examples
from minibert.layers.loss import IGNORE_INDEX
from minibert.models.base import forward_only
from minibert.training.objectives import rtd_counts

EVAL_SEED = 1234  # fixed: independent of the run's --seed


def build_eval_batches(documents, objective, seq_len, batch_size, masker, cls_id, sep_id, pad_id,
                       max_examples=512, short_seq_prob=0.1) -> list[dict]:
    """Masked batches (input_ids, labels, ...) of at most `max_examples` held-out sequences.

    Each sequence is masked with its own generator, seeded by its index, so the masks do not depend on the
    batch size: runs with different --batch-size are evaluated on exactly the same task.
    """
    rng = np.random.default_rng([EVAL_SEED, 0])
    examples = make_examples(documents, objective, seq_len, rng, cls_id, sep_id, short_seq_prob)[:max_examples]
    batches = []
    for start in range(0, len(examples), batch_size):
        chunk = examples[start:start + batch_size]
        batch = collate(chunk, pad_id)
        batch["labels"] = np.full_like(batch["input_ids"], IGNORE_INDEX)
        for row, example in enumerate(chunk):
            n = len(example.tokens)
            masked, labels = masker(example.tokens[None, :], np.random.default_rng([EVAL_SEED, 1, start + row]))
            batch["input_ids"][row, :n], batch["labels"][row, :n] = masked[0], labels[0]
        batches.append(batch)
    return batches


# The counts and sums an evaluation adds up (over batches, and over ranks when several share the work).
SUMS = ("mlm_loss_sum", "n_masked", "n_correct", "nsp_loss_sum", "n_pairs", "n_nsp_correct", "rtd_loss_sum",
        "n_rtd_correct", "n_rtd_tokens", "n_replaced", "loss_sum", "n_sequences")


def evaluate(model, batches, use_nsp: bool, comm=None) -> dict:
    """MLM loss (mean over all masked tokens), perplexity, masked-token accuracy, and NSP loss/accuracy.

    comm: with several ranks (training/distributed.py), every rank must call this; rank r evaluates batches
    r, r + N, ... and the sums are added over the ranks, so all get the metrics of the whole set (the float sums
    in another order than one process adds them: equal to rounding)."""
    split = comm is not None and comm.size > 1
    sums, parts_sum = _evaluation_sums(model, batches[comm.rank::comm.size] if split else batches, use_nsp)
    if split:
        # A distillation's losses: their names from the model, since a rank may have had no batch to evaluate.
        names = sorted(getattr(model, "part_names", ()))
        total = comm.allreduce_sum_(np.array([float(sums[k]) for k in SUMS] + [parts_sum.get(n, 0.0) for n in names]))
        sums = {k: (float(v) if k.endswith("_sum") else int(round(v))) for k, v in zip(SUMS, total)}
        parts_sum = {n: float(v) for n, v in zip(names, total[len(SUMS):])}  # (names: parts_sum's keys)
    return _metrics(model, sums, parts_sum, use_nsp)


def _evaluation_sums(model, batches, use_nsp: bool) -> tuple[dict, dict]:
    s = dict.fromkeys(SUMS, 0)
    s.update(mlm_loss_sum=0.0, nsp_loss_sum=0.0, rtd_loss_sum=0.0, loss_sum=0.0)
    parts_sum = {}  # a distillation's losses (out.parts), summed over sequences
    with forward_only(model):
        for batch in batches:
            out = model.forward(batch["input_ids"], token_type_ids=batch["token_type_ids"],
                                attention_mask=batch["attention_mask"], labels=batch["labels"],
                                next_sentence_label=batch["next_sentence_label"] if use_nsp else None)
            if out.get("parts") is not None:
                n = len(batch["input_ids"])
                s["n_sequences"] += n
                s["loss_sum"] += float(out.loss) * n
                for name, value in out.parts.items():
                    parts_sum[name] = parts_sum.get(name, 0.0) + value * n
            targets = batch["labels"].reshape(-1)[out.masked_positions]  # (M,)
            s["mlm_loss_sum"] += float(out.mlm_loss) * len(targets)
            s["n_correct"] += int((out.prediction_logits.argmax(axis=-1) == targets).sum())
            s["n_masked"] += len(targets)
            if use_nsp:
                nsl = batch["next_sentence_label"]
                s["nsp_loss_sum"] += float(out.nsp_loss) * len(nsl)
                s["n_nsp_correct"] += int((out.seq_relationship_logits.argmax(axis=-1) == nsl).sum())
                s["n_pairs"] += len(nsl)
            correct, tokens, replaced = rtd_counts(out, batch["attention_mask"])  # ELECTRA only
            if tokens:
                s["rtd_loss_sum"] += float(out.rtd_loss) * tokens
                s["n_rtd_correct"] += correct
                s["n_rtd_tokens"] += tokens
                s["n_replaced"] += replaced
    return s, parts_sum


def _metrics(model, s: dict, parts_sum: dict, use_nsp: bool) -> dict:
    n_masked = s["n_masked"]
    mlm_loss = s["mlm_loss_sum"] / max(1, n_masked)
    metrics = {"mlm_loss": mlm_loss, "ppl": math.exp(min(mlm_loss, 700.0)),
               "mlm_acc": s["n_correct"] / max(1, n_masked), "masked_tokens": n_masked}
    if use_nsp:
        metrics["nsp_loss"] = s["nsp_loss_sum"] / max(1, s["n_pairs"])
        metrics["nsp_acc"] = s["n_nsp_correct"] / max(1, s["n_pairs"])
        metrics["loss"] = metrics["mlm_loss"] + metrics["nsp_loss"]
    else:
        metrics["loss"] = mlm_loss
    n_rtd = s["n_rtd_tokens"]
    if n_rtd:  # the discriminator's replaced-token detection, and the accuracy of always guessing "original"
        metrics["rtd_loss"] = s["rtd_loss_sum"] / n_rtd
        metrics["rtd_acc"] = s["n_rtd_correct"] / n_rtd
        metrics["rtd_baseline_acc"] = 1.0 - s["n_replaced"] / n_rtd
        metrics["replaced_share"] = s["n_replaced"] / n_rtd
        metrics["loss"] = mlm_loss + model.rtd_weight * metrics["rtd_loss"]
    if s["n_sequences"]:  # a distillation: its losses, and its total loss, mean over the sequences
        metrics.update({name: value / s["n_sequences"] for name, value in parts_sum.items()})
        metrics["loss"] = s["loss_sum"] / s["n_sequences"]
    return metrics


def token_counts(train_documents, vocab_size: int) -> np.ndarray:
    """(V,) how often each token occurs in the training text."""
    counts = np.zeros(vocab_size, dtype=np.int64)
    for doc in train_documents:
        for sentence in doc:
            counts += np.bincount(sentence, minlength=vocab_size)
    return counts


def most_frequent_token_accuracy(counts: np.ndarray, batches) -> tuple[int, float]:
    """The baseline a model must beat: always guess the training text's most frequent token (`counts`, from
    `token_counts`). Returns (that token's id, its accuracy on the held-out masked positions)."""
    top = int(counts.argmax())
    labels = np.concatenate([b["labels"].reshape(-1) for b in batches])
    labels = labels[labels != IGNORE_INDEX]
    return top, float((labels == top).mean()) if len(labels) else 0.0
