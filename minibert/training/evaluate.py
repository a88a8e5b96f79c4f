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


def evaluate(model, batches, use_nsp: bool) -> dict:
    """MLM loss (mean over all masked tokens), perplexity, masked-token accuracy, and NSP loss/accuracy."""
    mlm_loss_sum = nsp_loss_sum = 0.0
    n_masked = n_correct = n_pairs = n_nsp_correct = 0
    rtd_loss_sum, n_rtd_correct, n_rtd_tokens, n_replaced = 0.0, 0, 0, 0
    parts_sum, loss_sum, n_sequences = {}, 0.0, 0  # a distillation's losses (out.parts), mean over sequences
    with forward_only(model):
        for batch in batches:
            out = model.forward(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"],
                                labels=batch["labels"],
                                next_sentence_label=batch["next_sentence_label"] if use_nsp else None)
            if out.get("parts") is not None:
                n = len(batch["input_ids"])
                n_sequences += n
                loss_sum += float(out.loss) * n
                for name, value in out.parts.items():
                    parts_sum[name] = parts_sum.get(name, 0.0) + value * n
            targets = batch["labels"].reshape(-1)[out.masked_positions]  # (M,)
            mlm_loss_sum += float(out.mlm_loss) * len(targets)
            n_correct += int((out.prediction_logits.argmax(axis=-1) == targets).sum())
            n_masked += len(targets)
            if use_nsp:
                nsl = batch["next_sentence_label"]
                nsp_loss_sum += float(out.nsp_loss) * len(nsl)
                n_nsp_correct += int((out.seq_relationship_logits.argmax(axis=-1) == nsl).sum())
                n_pairs += len(nsl)
            correct, tokens, replaced = rtd_counts(out, batch["attention_mask"])  # ELECTRA only
            if tokens:
                rtd_loss_sum += float(out.rtd_loss) * tokens
                n_rtd_correct, n_rtd_tokens, n_replaced = n_rtd_correct + correct, n_rtd_tokens + tokens, \
                    n_replaced + replaced
    mlm_loss = mlm_loss_sum / max(1, n_masked)
    metrics = {"mlm_loss": mlm_loss, "ppl": math.exp(min(mlm_loss, 700.0)), "mlm_acc": n_correct / max(1, n_masked),
               "masked_tokens": n_masked}
    if use_nsp:
        metrics["nsp_loss"] = nsp_loss_sum / max(1, n_pairs)
        metrics["nsp_acc"] = n_nsp_correct / max(1, n_pairs)
        metrics["loss"] = metrics["mlm_loss"] + metrics["nsp_loss"]
    else:
        metrics["loss"] = mlm_loss
    if n_rtd_tokens:  # the discriminator's replaced-token detection, and the accuracy of always guessing "original"
        metrics["rtd_loss"] = rtd_loss_sum / n_rtd_tokens
        metrics["rtd_acc"] = n_rtd_correct / n_rtd_tokens
        metrics["rtd_baseline_acc"] = 1.0 - n_replaced / n_rtd_tokens
        metrics["replaced_share"] = n_replaced / n_rtd_tokens
        metrics["loss"] = mlm_loss + model.rtd_weight * metrics["rtd_loss"]
    if n_sequences:  # a distillation: its losses, and its total loss, mean over the sequences
        metrics.update({name: value / n_sequences for name, value in parts_sum.items()})
        metrics["loss"] = loss_sum / n_sequences
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
