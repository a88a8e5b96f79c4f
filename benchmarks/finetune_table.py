"""Does pre-training pay? Fine-tune several starting models on the built-in tasks, several seeds each, and print
the table: test accuracy and macro-F1 (mean +- standard deviation over the seeds), and the minutes each row cost.

    python benchmarks/finetune_table.py \
        --row "untrained=untrained:runs/mini-wiki" --row "13-minute mini=runs/mini-wiki" \
        --row "60-minute mini=runs/mini-wiki-60" --tfidf --seeds 0 1 2 --jobs 2 --out runs/table

A row is NAME=MODEL[|FLAGS]: MODEL is anything `minibert finetune --model` takes, or untrained:RUN (the
same architecture and tokenizer as RUN with freshly initialised weights, seed 0); FLAGS are extra
`minibert finetune` options, e.g. "tuned=runs/mini|--lr 1e-4 --epochs 10". Without FLAGS a row runs the
defaults, the recipe that `minibert finetune` chooses for the model. --tfidf adds TF-IDF + logistic
regression on the same splits.

Every run is one process of one BLAS thread (OPENBLAS_NUM_THREADS=1), --jobs of them at a time: on a machine of
2 cores, --jobs 2. Each run's JSON summary is appended to OUT/results.jsonl as it ends, and a rerun skips the
runs already there, so an interrupted table resumes. The minutes of a row are its pre-training's (the run's
summary.json, when MODEL is a `minibert pretrain` run folder) plus the mean fine-tuning run's wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

TASKS = ("wiki-topics", "drug-reviews")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--row", action="append", default=[], metavar="NAME=MODEL[|FLAGS]", help="a table row")
    p.add_argument("--tfidf", action="store_true", help="add the TF-IDF + logistic regression row")
    p.add_argument("--tasks", nargs="+", default=list(TASKS), choices=TASKS)
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--jobs", type=int, default=2, help="runs at a time, one core each (default 2)")
    p.add_argument("--out", required=True, help="folder for results.jsonl and the runs' models")
    p.add_argument("--table-only", action="store_true", help="print the table of OUT/results.jsonl, run nothing")
    return p.parse_args()


def parse_row(text: str) -> tuple[str, str, list[str]]:
    if "=" not in text:
        raise SystemExit(f"--row {text!r}: expected NAME=MODEL[|FLAGS]")
    name, rest = text.split("=", 1)
    model, _, flags = rest.partition("|")
    return name.strip(), model.strip(), shlex.split(flags)


def untrained_copy(run: str, out: Path) -> Path:
    """A folder with RUN's config and tokenizer and freshly initialised weights (seed 0)."""
    from minibert.io.model_folder import resolve_model_and_tokenizer
    from minibert.models import BertForPreTraining
    from minibert.tokenizer import WordPieceTokenizer

    folder = out / f"untrained-{Path(run).name}"
    if (folder / "model.safetensors").exists():
        return folder
    checkpoint, tokenizer_dir = resolve_model_and_tokenizer(run, "--row")
    model = BertForPreTraining.from_pretrained(checkpoint)
    fresh = BertForPreTraining(model.config, seed=0)
    fresh.save_pretrained(folder)
    WordPieceTokenizer.from_pretrained(tokenizer_dir).save_pretrained(folder)
    return folder


def pretraining_minutes(model: str) -> float | None:
    summary = Path(model) / "summary.json"
    if not summary.is_file():
        return None
    data = json.loads(summary.read_text())
    seconds = data.get("wall_seconds")
    return seconds / 60 if seconds else None


def run_one(job: dict) -> dict:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    with tempfile.TemporaryDirectory() as folder:
        if job["row"] == "TF-IDF":
            cmd = [sys.executable, "-m", "minibert", "finetune", "--task", job["task"], "--baseline-only",
                   "--seed", str(job["seed"]), "--json", "--no-progress", "--out", folder]
        else:
            cmd = [sys.executable, "-m", "minibert", "finetune", "--task", job["task"], "--model", job["model"],
                   "--seed", str(job["seed"]), "--json", "--no-progress", "--out", folder, *job["flags"]]
        done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        return {**job, "error": done.stderr.strip().splitlines()[-1:]}
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    split = summary["reported_split"]
    scores = summary["baseline"][split] if job["row"] == "TF-IDF" else summary[split]
    return {**job, "accuracy": scores["accuracy"], "macro_f1": scores["macro_f1"],
            "minutes": summary["wall_time_s"] / 60, "settings": summary.get("settings"),
            "best_epoch": summary.get("best_epoch")}


def table(results: list[dict], rows: list[str], tasks, pre_minutes: dict) -> str:
    head = "| row | " + " | ".join(f"{t} accuracy | {t} macro-F1 | {t} minutes" for t in tasks) + " |"
    lines = [head, "|" + "---|" * (1 + 3 * len(tasks))]
    for row in rows:
        cells = []
        for task in tasks:
            got = [r for r in results if r["row"] == row and r["task"] == task and "accuracy" in r]
            if not got:
                cells += ["", "", ""]
                continue
            acc, f1 = (np.array([r[k] for r in got]) * 100 for k in ("accuracy", "macro_f1"))
            spread = (lambda x: f" +- {x.std(ddof=1):.1f}") if len(got) > 1 else (lambda x: "")
            minutes = np.mean([r["minutes"] for r in got]) + (pre_minutes.get(row) or 0)
            cells += [f"{acc.mean():.1f}{spread(acc)} (n={len(got)})", f"{f1.mean():.1f}{spread(f1)}",
                      f"{minutes:.1f}"]
        lines.append(f"| {row} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main():
    args = parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results_file = out / "results.jsonl"
    results = [json.loads(line) for line in results_file.read_text().splitlines()] if results_file.exists() else []
    rows, jobs, pre_minutes = [], [], {}
    for text in args.row:
        name, model, flags = parse_row(text)
        rows.append(name)
        if model.startswith("untrained:"):
            if not args.table_only:
                model = str(untrained_copy(model.split(":", 1)[1], out))
        else:
            pre_minutes[name] = pretraining_minutes(model)
        jobs += [{"row": name, "model": model, "flags": flags, "task": t, "seed": s}
                 for t in args.tasks for s in args.seeds]
    if args.tfidf:
        rows.append("TF-IDF")
        jobs += [{"row": "TF-IDF", "model": None, "flags": [], "task": t, "seed": s}
                 for t in args.tasks for s in args.seeds]
    done = {(r["row"], r["task"], r["seed"]) for r in results if "accuracy" in r}
    todo = [] if args.table_only else [j for j in jobs if (j["row"], j["task"], j["seed"]) not in done]
    # The longest runs first, so that the last ones to finish are short.
    todo.sort(key=lambda j: (j["task"] != "wiki-topics", j["row"] == "TF-IDF"))
    print(f"{len(todo)} runs to do, {args.jobs} at a time", file=sys.stderr)
    with ThreadPoolExecutor(args.jobs) as pool, results_file.open("a") as log:
        for result in pool.map(run_one, todo):
            log.write(json.dumps(result) + "\n")
            log.flush()
            results.append(result)
            shown = result.get("error") or f"accuracy {100 * result['accuracy']:.1f}"
            print(f"{result['row']} / {result['task']} / seed {result['seed']}: {shown}", file=sys.stderr)
    print(table(results, rows, args.tasks, pre_minutes))


if __name__ == "__main__":
    main()
