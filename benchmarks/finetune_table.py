"""Does pre-training pay? Fine-tune several starting models on the built-in tasks, several seeds each, and print
the table: each task's test metric (accuracy, entity F1, Spearman; macro-F1 in brackets for classification), as
mean +- standard deviation over the seeds, and the minutes each row cost.

    python benchmarks/finetune_table.py \
        --row "untrained=untrained:runs/mini-wiki" --row "13-minute mini=runs/mini-wiki" \
        --row "60-minute mini=runs/mini-wiki-60" --tfidf --seeds 0 1 2 --jobs 2 --out runs/table \
        --tasks imdb imdb:500 wiki-topics drug-reviews conll2003 stsb

A column is a built-in task, or TASK:N for the task on N labelled training examples (`--max-train-examples N`,
a seeded draw: where pre-training should matter most).

A row is NAME=MODEL[|FLAGS]: MODEL is anything `minibert finetune --model` takes, or untrained:RUN (the
same architecture and tokenizer as RUN with freshly initialised weights, seed 0); FLAGS are extra
`minibert finetune` options, e.g. "tuned=runs/mini|--lr 1e-4 --epochs 10". Without FLAGS a row runs the
defaults, the recipe that `minibert finetune` chooses for the model. --tfidf adds the baselines' row on the same
splits: TF-IDF + logistic regression for classification (`--baseline-only`); the feature tagger (CRF) for
conll2003 and TF-IDF cosine for stsb, which each model run of those tasks computes beside it (`--baseline`).

Every run is one process of one BLAS thread (OPENBLAS_NUM_THREADS=1), --jobs of them at a time: on a machine of
2 cores, --jobs 2. Each run's JSON summary is appended to OUT/results.jsonl as it ends, and a rerun skips the
runs already there, so an interrupted table resumes. The minutes of a row are its pre-training's (the run's
summary.json, when MODEL is a `minibert pretrain` run folder) plus the mean fine-tuning run's wall time.

--save FILE keeps the table's runs (row, task, seed, scores, minutes; no paths) as JSON, and --from FILE prints
the table of such a file again without running anything: the tables in the docs are printed from the files in
docs/bench/.
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

from minibert.finetune.bench import METRIC_LABELS, ZERO_SHOT, result_of
from minibert.finetune.tasks import TASKS as BUILT_IN
from minibert.io.atomic import atomic_write_text

TASKS = ("wiki-topics", "drug-reviews")  # the default columns
BASELINE_ROW = "TF-IDF"


def parse_column(text: str) -> tuple[str, int | None]:
    """TASK or TASK:N -> (task, N or None)."""
    task, _, count = text.partition(":")
    if task not in BUILT_IN or (count and not (count.isdigit() and int(count) > 0)):
        raise SystemExit(f"--tasks {text!r}: expected a built-in task ({', '.join(BUILT_IN)}) or TASK:N, N > 0")
    return task, int(count) if count else None


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--row", action="append", default=[], metavar="NAME=MODEL[|FLAGS]", help="a table row")
    p.add_argument("--tfidf", action="store_true",
                   help="add the baselines' row: TF-IDF + logistic regression, the CRF tagger (conll2003), TF-IDF "
                        "cosine (stsb)")
    p.add_argument("--tasks", nargs="+", default=list(TASKS), metavar="TASK[:N]",
                   help="the columns: built-in tasks, TASK:N on N training examples (default: %(default)s)")
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--jobs", type=int, default=2, help="runs at a time, one core each (default 2)")
    p.add_argument("--out", help="folder for results.jsonl and the runs' models")
    p.add_argument("--table-only", action="store_true", help="print the table of OUT/results.jsonl, run nothing")
    p.add_argument("--save", metavar="FILE", help="also write the table's runs to FILE (JSON, no paths)")
    p.add_argument("--from", dest="saved", metavar="FILE", help="print the table of a --save file, run nothing")
    args = p.parse_args()
    if not args.saved and not args.out:
        p.error("--out is required (or --from FILE to print a saved table)")
    for column in args.tasks:
        parse_column(column)
    return args


def parse_row(text: str) -> tuple[str, str, list[str]]:
    if "=" not in text:
        raise SystemExit(f"--row {text!r}: expected NAME=MODEL[|FLAGS]")
    name, rest = text.split("=", 1)
    model, _, flags = rest.partition("|")
    return name.strip(), model.strip(), shlex.split(flags)


def untrained_copy(run: str, out: Path) -> Path:
    """OUT/untrained-<RUN's name>: RUN's config and tokenizer with freshly initialised weights (seed 0)."""
    from minibert.finetune.untrained import untrained_copy as copy

    return copy(run, out / f"untrained-{Path(run).name}")


def pretraining_minutes(model: str) -> float | None:
    """A `minibert pretrain` run's wall minutes (its summary.json), plus those of the run it was --init from."""
    summary = Path(model) / "summary.json"
    if not summary.is_file():
        return None
    seconds = json.loads(summary.read_text()).get("wall_seconds")
    if not seconds:
        return None
    settings = Path(model) / "settings.json"
    init = json.loads(settings.read_text()).get("init") if settings.is_file() else None
    return seconds / 60 + ((pretraining_minutes(init) or 0) if init else 0)


def _command(job: dict, folder: str) -> list[str]:
    task, count = parse_column(job["task"])
    cmd = [sys.executable, "-m", "minibert", "finetune", "--task", task, "--seed", str(job["seed"]), "--json",
           "--no-progress", "--out", folder]
    cmd += ["--max-train-examples", str(count)] if count else []
    if job["row"] == BASELINE_ROW:
        return cmd + ["--baseline-only"]
    return cmd + ["--model", job["model"], *job["flags"]] + (["--baseline"] if BUILT_IN[task].kind != "sequence"
                                                               else [])


def run_one(job: dict) -> dict:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    with tempfile.TemporaryDirectory() as folder:
        done = subprocess.run(_command(job, folder), env=env, capture_output=True, text=True)
    if done.returncode != 0:
        return {**job, "error": done.stderr.strip().splitlines()[-1:]}
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    split, minutes = summary["reported_split"], summary["wall_time_s"] / 60
    if job["row"] == BASELINE_ROW:
        scores = summary["baseline"][split]
        return {**job, "score": scores["accuracy"], "macro_f1": scores["macro_f1"], "minutes": minutes}
    task = parse_column(job["task"])[0]
    record = result_of(task, job["seed"], summary)  # the test metrics and the baselines' (in percent)
    metric = BUILT_IN[task].metrics[0]  # (eval_score: the best epoch's, what settings are chosen on, never test)
    return {**job, "score": summary[split][metric], "macro_f1": summary[split].get("macro_f1"),
            "eval_score": (summary.get("eval") or {}).get(metric),
            "baselines": record["baselines"], "minutes": minutes, "settings": summary.get("settings"),
            "best_epoch": summary.get("best_epoch")}


def _cell(values: list[float]) -> str:
    x = 100 * np.array(values)
    return f"{x.mean():.1f}" + (f" +- {x.std(ddof=1):.1f}" if len(x) > 1 else "")


def table(results: list[dict], rows: list[str], tasks, pre_minutes: dict) -> str:
    """Per task: the headline metric's mean +- standard deviation over the seeds (n runs), macro-F1 in brackets
    where the task has it, and the row's minutes. The TF-IDF row of a conll2003 or stsb column is the baseline
    its model runs computed (the CRF tagger; TF-IDF cosine), over the runs of the first row that has them."""
    lines = ["| row | " + " | ".join(f"{t} {METRIC_LABELS[BUILT_IN[parse_column(t)[0]].metrics[0]]} | {t} minutes"
                                     for t in tasks) + " |", "|" + "---|" * (1 + 2 * len(tasks))]
    for row in rows:
        cells = []
        for task in tasks:
            got = [r for r in results if r["row"] == row and r["task"] == task and "error" not in r]
            if row == BASELINE_ROW and BUILT_IN[parse_column(task)[0]].kind != "sequence":
                cells += [_computed_baseline(results, rows, task), ""]
                continue
            if not got:
                cells += ["", ""]
                continue
            score = [r.get("score", r.get("accuracy")) for r in got]  # ("accuracy": tables made before "score")
            f1 = [r["macro_f1"] for r in got if r.get("macro_f1") is not None]
            minutes = np.mean([r["minutes"] for r in got]) + (pre_minutes.get(row) or 0)
            cells += [f"{_cell(score)} (n={len(got)})" + (f" ({_cell(f1)})" if len(f1) == len(got) else ""),
                      f"{minutes:.1f}"]
        lines.append(f"| {row} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _computed_baseline(results: list[dict], rows: list[str], task: str) -> str:
    for row in rows:
        got = [r["baselines"] for r in results if r["row"] == row and r["task"] == task and r.get("baselines")]
        if got:
            label = next(label for label in got[0] if label != ZERO_SHOT)  # the CRF tagger; TF-IDF cosine
            return f"{_cell([b[label] / 100 for b in got])} (n={len(got)}, {label})"
    return ""


KEPT = ("row", "task", "seed", "score", "eval_score", "macro_f1", "minutes", "baselines")  # what --save keeps of a run


def save(path: Path, results: list[dict], rows: list[str], tasks, pre_minutes: dict) -> None:
    """The table's finished runs, without paths or settings (written to a temporary file, then renamed)."""
    runs = [{key: r[key] for key in KEPT if key in r} | {"score": r.get("score", r.get("accuracy"))} for r in results
            if r["row"] in rows and r["task"] in tasks and "error" not in r]
    runs.sort(key=lambda r: (rows.index(r["row"]), list(tasks).index(r["task"]), r["seed"]))
    data = {"rows": rows, "tasks": list(tasks), "pretraining_minutes": {row: pre_minutes.get(row) for row in rows},
            "runs": runs}
    atomic_write_text(path, json.dumps(data, indent=1) + "\n")


def saved_table(path: str) -> str:
    """The table of a --save file, as it printed when it was saved."""
    try:
        data = json.loads(Path(path).read_text())
        return table(data["runs"], data["rows"], data["tasks"], data["pretraining_minutes"])
    except (OSError, ValueError, KeyError) as error:
        raise SystemExit(f"--from {path}: not a table saved by --save ({error})") from None


def main():
    args = parse_args()
    if args.saved:
        print(saved_table(args.saved))
        return
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
        rows.append(BASELINE_ROW)
        jobs += [{"row": BASELINE_ROW, "model": None, "flags": [], "task": t, "seed": s} for t in args.tasks
                 for s in args.seeds if BUILT_IN[parse_column(t)[0]].kind == "sequence"]
    done = {(r["row"], r["task"], r["seed"]) for r in results if "error" not in r}
    todo = [] if args.table_only else [j for j in jobs if (j["row"], j["task"], j["seed"]) not in done]
    # The longest runs first, so that the last ones to finish are short.
    todo.sort(key=lambda j: (j["task"] not in ("wiki-topics", "conll2003"), j["row"] == BASELINE_ROW))
    print(f"{len(todo)} runs to do, {args.jobs} at a time", file=sys.stderr)
    with ThreadPoolExecutor(args.jobs) as pool, results_file.open("a") as log:
        for result in pool.map(run_one, todo):
            log.write(json.dumps(result) + "\n")
            log.flush()
            results.append(result)
            shown = result.get("error") or f"{100 * result['score']:.1f}"
            print(f"{result['row']} / {result['task']} / seed {result['seed']}: {shown}", file=sys.stderr)
    print(table(results, rows, args.tasks, pre_minutes))
    if args.save:
        save(Path(args.save), results, rows, args.tasks, pre_minutes)


if __name__ == "__main__":
    main()
