"""What does a model's pre-training carry into a task before any fine-tuning? Each text is embedded by the frozen
model (the mean of its last hidden states over the tokens, the first max-positions tokens of the text), logistic
regression is fitted on the training split with its C chosen on the eval split, and the test split is scored once.

    python benchmarks/frozen_features.py --task drug-reviews --out runs/frozen \
        --row "13-minute mini=runs/mini-wiki" --row "untrained=untrained:runs/mini-wiki"

A row is NAME=MODEL: a model folder or `minibert pretrain` run, or untrained:RUN (RUN's config and tokenizer with
freshly initialised weights, as in finetune_table.py). Fine-tuning can learn features of its own; this probe
cannot, so it measures the representation alone: a pre-trained row no better than the untrained one has learned
nothing the task can use. Needs scikit-learn (`pip install -e '.[baselines]'`).
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from finetune_table import parse_row, untrained_copy  # benchmarks/finetune_table.py
from minibert.finetune.baseline import choose_c
from minibert.finetune.data import label_ids
from minibert.finetune.metrics import classification_metrics
from minibert.finetune.tasks import TASKS, first, load_task

C_GRID = (0.01, 0.1, 1.0, 10.0)  # inverse L2 strengths tried on the eval split


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--row", action="append", required=True, metavar="NAME=MODEL", help="a table row")
    classification = [name for name, spec in TASKS.items() if spec.kind == "sequence"]
    p.add_argument("--task", default="drug-reviews", choices=classification,
                   help="a built-in text classification task (default drug-reviews)")
    p.add_argument("--out", required=True, help="folder for the untrained rows' models")
    p.add_argument("--batch-size", type=int, default=32, help="texts per forward (default 32)")
    p.add_argument("--max-examples", type=int, metavar="N",
                   help="the first N texts of each split (imdb's 49,578 take minutes a row; default: all)")
    return p.parse_args()


def probe(features: dict, task, labels: list[str]) -> dict:
    """Logistic regression on standardised features, C chosen by eval accuracy (the TF-IDF baseline's
    choose_c); test accuracy and macro-F1."""
    from sklearn.preprocessing import StandardScaler

    label2id = {label: i for i, label in enumerate(labels)}
    y = {split: label_ids(getattr(task, split), label2id) for split in features}
    scaler = StandardScaler().fit(features["train"])
    X = {split: scaler.transform(f) for split, f in features.items()}
    clf, C, eval_accuracy = choose_c(X["train"], y["train"], X["eval"], y["eval"], C_GRID, max_iter=5000)
    metrics = classification_metrics(y["test"], clf.predict(X["test"]), labels)
    return {"C": C, "eval_accuracy": eval_accuracy, **metrics}


def first_of_each_split(task, n: int):
    """The task with the first n texts of its train, eval and test splits (a split of fewer stays whole)."""
    return replace(task, **{split: first(getattr(task, split), n) for split in ("train", "eval", "test")})


def main():
    args = parse_args()
    from minibert.embeddings import SentenceEncoder

    task = load_task(args.task)
    if args.max_examples:
        task = first_of_each_split(task, args.max_examples)
    labels = sorted(set(task.train.labels))
    majority = max(task.test.labels.count(label) for label in labels) / len(task.test)
    print(f"{args.task}: {len(task.train)} train, {len(task.eval)} eval, {len(task.test)} test texts; "
          f"the majority class is {majority:.1%} of test")
    print(f"{'row':<28} {'C':>6} {'eval acc':>9} {'test acc':>9} {'macro-F1':>9}")
    for name, model, _ in map(parse_row, args.row):
        if model.startswith("untrained:"):
            model = str(untrained_copy(model.split(":", 1)[1], Path(args.out)))
        encoder = SentenceEncoder.from_pretrained(model)
        features = {split: encoder.encode(getattr(task, split).texts, batch_size=args.batch_size)
                    for split in ("train", "eval", "test")}
        r = probe(features, task, labels)
        print(f"{name:<28} {r['C']:>6} {r['eval_accuracy']:>9.1%} {r['accuracy']:>9.1%} {r['macro_f1']:>9.1%}",
              flush=True)


if __name__ == "__main__":
    main()
