"""Solutions to the exercises of chapter 7 (fine-tuning)."""

import numpy as np

IGNORE_INDEX = -100  # the label the loss skips


def best_span(start_logits, end_logits, max_answer_length):
    T = len(start_logits)
    score = start_logits[:, None] + end_logits[None, :]  # (T, T): row = start, column = end
    s, e = np.indices((T, T))
    score = np.where((e >= s) & (e - s < max_answer_length), score, -np.inf)
    first, last = np.unravel_index(np.argmax(score), score.shape)
    return int(first), int(last)


def first_piece_labels(tokenizer, words, tag_ids):
    ids, labels = [tokenizer.cls_token_id], [IGNORE_INDEX]
    for word, tag in zip(words, tag_ids):
        pieces = tokenizer.encode(word, add_special_tokens=False).input_ids
        ids += pieces
        labels += [tag] + [IGNORE_INDEX] * (len(pieces) - 1)
    return ids + [tokenizer.sep_token_id], labels + [IGNORE_INDEX]


def macro_f1(y_true, y_pred, num_classes):
    cm = np.zeros((num_classes, num_classes), dtype=np.int64)  # (C, C) rows: truth, columns: prediction
    np.add.at(cm, (y_true, y_pred), 1)
    tp = np.diag(cm).astype(np.float64)  # (C,)
    precision = np.divide(tp, cm.sum(axis=0), out=np.zeros_like(tp), where=cm.sum(axis=0) > 0)  # (C,)
    recall = np.divide(tp, cm.sum(axis=1), out=np.zeros_like(tp), where=cm.sum(axis=1) > 0)  # (C,)
    f1 = np.divide(2 * precision * recall, precision + recall, out=np.zeros_like(tp),
                   where=precision + recall > 0)  # (C,)
    present = (cm.sum(axis=0) + cm.sum(axis=1)) > 0  # classes in the truth or the predictions
    return float(f1[present].mean())


def spearman(x, y):
    def ranks(v):
        order = np.argsort(v, kind="stable")
        r = np.empty(len(v))
        r[order] = np.arange(1, len(v) + 1)  # (N,) ranks, ties still in the order they came
        for value in np.unique(v):
            tied = v == value
            r[tied] = r[tied].mean()  # the tied share the mean of their ranks
        return r
    rx, ry = ranks(x), ranks(y)
    dx, dy = rx - rx.mean(), ry - ry.mean()
    return float((dx * dy).sum() / np.sqrt((dx * dx).sum() * (dy * dy).sum()))
