"""minibert against transformers + torch on a built-in task: the same weights, split, seed and hyper-parameters.

    python benchmarks/tasks_reference.py --task stsb --model minilm
    python benchmarks/tasks_reference.py --task conll2003 --max-train-examples 64 --max-eval-examples 32 --epochs 1

The options are `minibert finetune`'s (the task's defaults apply as there, and flags override them). The script
reads the task's data and resolves its settings exactly as `minibert finetune --task` does (the same training
subset, eval and test slices, lr, epochs, batch size, max length, warmup, weight decay and clipping), runs
`minibert finetune` in a process of its own, then the same recipe in transformers (BertForTokenClassification for
conll2003, BertForSequenceClassification with problem_type "regression" for stsb) and torch's AdamW with
transformers' linear warmup and decay, the best epoch picked on eval in both, and prints the two test metrics side
by side. The batches are minibert's own: the same examples meet in the same batches in the same turn (grouped by
length unless --no-group-by-length). Dropout masks and rounding differ, so the runs are the same recipe, not the
same numbers: their difference is the spread of a seed, not a bug.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KINDS = {"conll2003": "tokens", "stsb": "regression"}


def parse_args():
    from minibert.commands.finetune import add_arguments
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(p)
    p.description = __doc__
    p.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    p.add_argument("--reference-only", action="store_true",
                   help="run transformers alone (minibert's run of the same seed made apart, e.g. on another core)")
    args = p.parse_args(sys.argv[1:])
    argv = _finetune_argv(sys.argv[1:])
    if args.task not in KINDS:
        p.error(f"--task must be one of {', '.join(KINDS)}")
    args.argv = argv
    return args


def _finetune_argv(argv: list[str]) -> list[str]:
    """The arguments `minibert finetune` takes: those of this script's own options (--threads N,
    --reference-only) left out, as argparse reads them."""
    own = argparse.ArgumentParser(add_help=False)
    own.add_argument("--threads")
    own.add_argument("--reference-only", action="store_true")
    return own.parse_known_args(argv)[1]


def prepared(args):
    """(train, eval, test, settings, checkpoint, labels): what `minibert finetune --task` trains on, with."""
    from minibert.commands.finetune_setup import setup_training, take_task_defaults

    take_task_defaults(args)
    quiet = lambda message: None  # noqa: E731
    if args.task_type == "tokens":
        from minibert.commands.finetune_tokens import _prepare_tagged
        train, eval_, test, labels = _prepare_tagged(args, quiet)
    else:
        from minibert.commands.finetune_regression import _prepare_scored
        (train, eval_, test), labels = _prepare_scored(args, quiet), None
    checkpoint, _, _, settings, _ = setup_training(args, args.task_type, len(train))
    return train, eval_, test, settings, checkpoint, labels


def run_minibert(args, out: Path) -> dict:
    command = [sys.executable, "-m", "minibert", "finetune", *args.argv, "--out", str(out), "--overwrite", "--json",
               "--no-progress"]
    done = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------------- the reference
def token_batches(tokenizer, data, tag2id, max_length):
    """Per sentence: input ids, and labels on each word's first piece (-100 elsewhere), and the word index of
    each labelled piece."""
    rows = []
    for words, tags in zip(data.words, data.tags):
        enc = tokenizer(words, is_split_into_words=True, truncation=True, max_length=max_length)
        labels, seen = [], set()
        for word in enc.word_ids():
            first = word is not None and word not in seen
            labels.append(tag2id[tags[word]] if first else -100)
            if word is not None:
                seen.add(word)
        rows.append({"input_ids": enc["input_ids"], "token_type_ids": enc["token_type_ids"], "labels": labels,
                     "words": [w for w in enc.word_ids()]})
    return rows


def pair_batches(tokenizer, data, max_length):
    rows = []
    for a, b, score in zip(data.first, data.second, data.scores):
        enc = tokenizer(a, b, truncation="longest_first", max_length=max_length)
        rows.append({"input_ids": enc["input_ids"], "token_type_ids": enc["token_type_ids"], "labels": float(score)})
    return rows


def collate(rows, torch, pad_id):
    T = max(len(r["input_ids"]) for r in rows)
    ids = torch.full((len(rows), T), pad_id, dtype=torch.long)
    types = torch.zeros((len(rows), T), dtype=torch.long)
    mask = torch.zeros((len(rows), T), dtype=torch.long)
    token_labels = isinstance(rows[0]["labels"], list)
    labels = torch.full((len(rows), T), -100, dtype=torch.long) if token_labels else \
        torch.tensor([r["labels"] for r in rows], dtype=torch.float32)
    for i, r in enumerate(rows):
        n = len(r["input_ids"])
        ids[i, :n] = torch.tensor(r["input_ids"])
        types[i, :n] = torch.tensor(r["token_type_ids"])
        mask[i, :n] = 1
        if token_labels:
            labels[i, :n] = torch.tensor(r["labels"])
    return {"input_ids": ids, "token_type_ids": types, "attention_mask": mask, "labels": labels}


def predict(model, rows, torch, pad_id, batch_size=64):
    outputs = []
    model.eval()
    with torch.no_grad():
        for start in range(0, len(rows), batch_size):
            batch = collate(rows[start:start + batch_size], torch, pad_id)
            batch.pop("labels")
            outputs.extend(model(**batch).logits.numpy())
    return outputs


def score(kind, model, rows, data, torch, pad_id, tag_names):
    from minibert.finetune.ner_metrics import entity_metrics
    from minibert.finetune.similarity_metrics import similarity_metrics

    logits = predict(model, rows, torch, pad_id)
    if kind == "regression":
        return similarity_metrics([z[0] for z in logits], data.scores)
    predicted = []
    for z, r, words in zip(logits, rows, data.words):
        tags = ["O"] * len(words)  # words cut by max_length are predicted O, as minibert scores them
        for position, (label, word) in enumerate(zip(r["labels"], r["words"])):
            if label != -100:
                tags[word] = tag_names[int(z[position].argmax())]
        predicted.append(tags)
    return entity_metrics(data.tags, predicted)


def run_reference(args, train, eval_, test, settings, checkpoint, tag_names) -> dict:
    import numpy as np
    import torch
    import transformers

    from minibert.finetune.train import training_batches
    from minibert.optim import default_no_decay, linear_warmup_decay

    torch.set_num_threads(args.threads)
    torch.manual_seed(settings.seed)
    kind = args.task_type
    tokenizer = transformers.BertTokenizerFast.from_pretrained(checkpoint)
    if kind == "tokens":
        tag2id = {t: i for i, t in enumerate(tag_names)}
        model = transformers.BertForTokenClassification.from_pretrained(
            checkpoint, num_labels=len(tag_names), id2label=dict(enumerate(tag_names)), label2id=tag2id)
        rows = {name: token_batches(tokenizer, data, tag2id, settings.max_length)
                for name, data in (("train", train), ("eval", eval_), ("test", test))}
    else:
        model = transformers.BertForSequenceClassification.from_pretrained(checkpoint, num_labels=1,
                                                                           problem_type="regression")
        rows = {name: pair_batches(tokenizer, data, settings.max_length)
                for name, data in (("train", train), ("eval", eval_), ("test", test))}
    if settings.dropout is not None:
        for module in model.modules():
            if isinstance(module, torch.nn.Dropout):
                module.p = settings.dropout
    groups = [{"params": [p for n, p in model.named_parameters() if not default_no_decay(n)],
               "weight_decay": settings.weight_decay},
              {"params": [p for n, p in model.named_parameters() if default_no_decay(n)], "weight_decay": 0.0}]
    optimizer = torch.optim.AdamW(groups, lr=settings.lr)
    B = settings.batch_size
    total = -(-len(rows["train"]) // B) * settings.epochs
    warmup = int(settings.warmup_ratio * total)
    rng = np.random.default_rng([settings.seed, 2])  # minibert's batch-order stream: the same batches in turn
    lengths = np.array([len(r["input_ids"]) for r in rows["train"]])  # (N,) the same ids, so the same lengths
    pad_id = tokenizer.pad_token_id
    select = settings.select_metric
    best, best_state, step, start = None, None, 0, time.perf_counter()
    for epoch in range(1, settings.epochs + 1):
        model.train()
        for chosen in training_batches(lengths, B, rng, settings.group_by_length):
            for group in optimizer.param_groups:
                group["lr"] = linear_warmup_decay(step, settings.lr, warmup, total)
            loss = model(**collate([rows["train"][i] for i in chosen], torch, pad_id)).loss
            loss.backward()
            if settings.max_grad_norm:
                torch.nn.utils.clip_grad_norm_(model.parameters(), settings.max_grad_norm)
            optimizer.step()
            optimizer.zero_grad()
            step += 1
        metrics = score(kind, model, rows["eval"], eval_, torch, pad_id, tag_names)
        print(f"reference epoch {epoch}: eval {select} {metrics[select]:.4f}", flush=True)
        if best is None or metrics[select] > best:
            best, best_state = metrics[select], {k: v.clone() for k, v in model.state_dict().items()}
    model.load_state_dict(best_state)
    result = score(kind, model, rows["test"], test, torch, pad_id, tag_names)
    result["train_time_s"] = round(time.perf_counter() - start, 1)
    return result


def main():
    args = parse_args()
    with tempfile.TemporaryDirectory(prefix="tasks-reference-") as folder:
        out = Path(args.out) if args.out else Path(folder) / "minibert"
        train, eval_, test, settings, checkpoint, tag_names = prepared(args)
        print(f"{args.task}: {len(train)} train / {len(eval_)} eval / {len(test)} test; lr {settings.lr:g}, "
              f"{settings.epochs} epochs, batch {settings.batch_size}, max length {settings.max_length}, seed "
              f"{settings.seed}", flush=True)
        ours = None if args.reference_only else run_minibert(args, out)
        theirs = run_reference(args, train, eval_, test, settings, checkpoint, tag_names)
    metric = {"tokens": "f1", "regression": "spearman"}[args.task_type]
    if ours is None:
        print(json.dumps({"reference": theirs, "seed": settings.seed}))
        return
    print(f"\n{'':24}{'minibert':>10}{'transformers':>14}")
    for name in (metric, "pearson" if metric == "spearman" else "token_accuracy"):
        print(f"{'test ' + name:24}{ours['test'][name]:>10.4f}{theirs[name]:>14.4f}")
    print(f"{'train seconds':24}{ours['train_time_s']:>10.1f}{theirs['train_time_s']:>14.1f}")


if __name__ == "__main__":
    main()
