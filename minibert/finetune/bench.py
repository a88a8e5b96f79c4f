"""`minibert bench`: fine-tune one model on every built-in task (finetune/tasks.py) with the tasks' defaults, and
put its test scores beside the baselines' and BERT-base's published figures in one table (Markdown, JSON and a
bar chart).

Each (task, seed) run writes its metrics.json into OUT/<task>-seed<seed>/ and, once finished, a result file
OUT/<task>-seed<seed>.json: a bench started again skips the runs whose result file is there (resumable), and
redoes an interrupted one from the start. `quick` is a smoke run: tiny training subsets, one epoch, tiny eval
and test slices. `max_train_examples` sets every task's training-set size (a few labels: how far does the model
get with 500?). Each result file names the bench that made it (the model, quick, the training-set size): a result
of another bench in the same folder is refused rather than mixed into the table.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from minibert.finetune.tasks import TASKS

QUICK = {"max_train_examples": 48, "epochs": 1, "max_eval_examples": 24}  # a smoke run's options, every task

# Where each kind of run's metrics.json keeps the baselines' headline numbers: (name in the table, path).
ZERO_SHOT = "zero-shot cosine of the starting model"  # the one baseline that depends on the model fine-tuned
BASELINES = {"sequence": (("TF-IDF + logistic regression", ("baseline", "test", "accuracy")),),
             "tokens": (("feature tagger ({method})", ("baseline", "test", "f1")),),
             "regression": (("TF-IDF cosine", ("baseline", "tfidf_cosine", "test", "spearman")),
                            (ZERO_SHOT, ("baseline", "zero_shot_cosine", "test", "spearman")))}


def _get(record: dict, path):
    for key in path:
        if not isinstance(record, dict) or record.get(key) is None:
            return None
        record = record[key]
    return record


def result_of(name: str, seed: int, metrics: dict) -> dict:
    """The bench's record of one run: the task's test metrics (in percent), its baselines', the time."""
    spec = TASKS[name]
    scores = {metric: 100 * metrics["test"][metric] for metric in spec.metrics if metric in metrics["test"]}
    method = {"features+crf": "CRF", "features+logistic_regression": "logistic regression"}.get(
        _get(metrics, ("baseline", "method")), "")
    baselines = {label.format(method=method): 100 * value for label, path in BASELINES[spec.kind]
                 if (value := _get(metrics, path)) is not None}
    return {"task": name, "seed": seed, "metric": spec.metrics[0], "test": scores, "baselines": baselines,
            "epochs": metrics["settings"]["epochs"], "lr": metrics["settings"]["lr"],
            "max_length": metrics["settings"]["max_length"], "num_train": metrics["num_train"],
            "num_test": metrics["num_test"], "train_time_s": metrics["train_time_s"],
            "wall_time_s": metrics.get("wall_time_s")}


def run_bench(model: str, tasks: list[str], out: Path, seeds: list[int], quick: bool, finetune, log=print,
              progress: bool = True, max_train_examples: int | None = None) -> dict:
    """Fine-tune `model` on each task and seed not yet done: finetune(task, seed, run folder, quick) runs one
    `minibert finetune --task` (with max_train_examples, when given) and returns its metrics.json as a dict.
    Returns the table (table()). A result file already in `out` from another bench (another model, quick or
    training-set size) is a ValueError."""
    from minibert._progress import tqdm

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    jobs = [(name, seed) for name in tasks for seed in seeds]
    done = {job: out / f"{job[0]}-seed{job[1]}.json" for job in jobs}
    todo = [job for job in jobs if not done[job].exists()]
    made_by = {"model": model, "quick": quick, "max_train_examples": max_train_examples}
    for job in jobs:
        if job not in todo:
            _refuse_another_bench(done[job], _read(done[job]), made_by)
    if len(todo) < len(jobs):
        log(f"bench: {len(jobs) - len(todo)} of {len(jobs)} runs already finished in {out}/ (kept; delete their "
            f".json to redo them)")
    bar = tqdm(total=len(jobs), initial=len(jobs) - len(todo), desc="bench", unit="run", disable=not progress)
    started = time.perf_counter()
    for i, (name, seed) in enumerate(todo):
        bar.set_postfix_str(f"{name} seed {seed}")
        log(f"\nbench: {name}, seed {seed} ({i + 1} of {len(todo)} to run)")
        metrics = finetune(name, seed, out / f"{name}-seed{seed}", quick)
        _write(done[(name, seed)], json.dumps({**result_of(name, seed, metrics), **made_by}, indent=2) + "\n")
        bar.update(1)
        elapsed = time.perf_counter() - started
        left = len(todo) - i - 1
        if left:
            log(f"bench: {elapsed / 60:.1f} min so far; about {elapsed / (i + 1) * left / 60:.1f} min left for "
                f"{left} more run{'s' if left > 1 else ''} (at this pace)")
    bar.close()
    results = [_read(done[job]) for job in jobs]
    return table(model, results, quick)


def _bench_words(field: str, value) -> str:
    if field == "model":
        return f"model {value}"
    if field == "quick":
        return "--quick" if value else "no --quick"
    return f"--max-train-examples {value}" if value else "each task's own training set"


def _refuse_another_bench(path: Path, record: dict, made_by: dict) -> None:
    """A finished result of another bench (model, quick, training-set size) is refused in one line. (A result file
    without these fields, written by an older minibert, is checked for the training-set size alone.)"""
    for field, wanted in made_by.items():
        if field in record or field == "max_train_examples":
            if (got := record.get(field)) != wanted:
                raise ValueError(f"{path} was made by another bench ({_bench_words(field, got)}, not "
                                 f"{_bench_words(field, wanted)}): give another --out, or delete it to redo it")


def _read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _write(path: Path, text: str):
    from minibert.io.atomic import atomic_write_text
    atomic_write_text(path, text)


def table(model: str, results: list[dict], quick: bool) -> dict:
    """One row per task: the model's headline test metric (mean and spread over seeds), the baselines', and
    BERT-base's published figure."""
    rows = []
    for name in dict.fromkeys(r["task"] for r in results):
        runs = [r for r in results if r["task"] == name]
        metric = runs[0]["metric"]
        values = np.array([r["test"][metric] for r in runs])
        published = TASKS[name].published
        rows.append({"task": name, "metric": metric, "seeds": [r["seed"] for r in runs],
                     "mean": float(values.mean()), "std": float(values.std()) if len(values) > 1 else None,
                     "baselines": {label: float(np.mean([r["baselines"][label] for r in runs]))
                                   for label in runs[0]["baselines"]},
                     "published": None if published is None else vars(published),
                     "train_minutes": float(np.mean([r["train_time_s"] for r in runs])) / 60,
                     "num_train": runs[0]["num_train"], "num_test": runs[0]["num_test"]})
    cap = results[0].get("max_train_examples") if results else None
    return {"model": model, "quick": quick, "max_train_examples": cap, "rows": rows}


METRIC_LABELS = {"accuracy": "accuracy", "f1": "entity F1", "spearman": "Spearman"}


def markdown(bench: dict) -> str:
    quick = " (--quick: a smoke run on tiny slices; the numbers mean nothing)" if bench["quick"] else ""
    cap = bench.get("max_train_examples")
    few = f" (at most {cap:,} training examples per task)" if cap else ""
    lines = [f"minibert bench, model {bench['model']}{few}{quick}", "",
             "| task | test metric | minibert | baselines | BERT-base, published | train min | train / test |",
             "|---|---|---|---|---|---|---|"]
    for row in bench["rows"]:
        score = f"{row['mean']:.1f}" + (f" ± {row['std']:.1f} ({len(row['seeds'])} seeds)" if row["std"] is not None
                                        else "")
        baselines = "; ".join(f"{label} {value:.1f}" for label, value in row["baselines"].items()) or "-"
        published = row["published"]
        reference = f"{published['value']:.1f} ({published['note']})" if published else "-"
        lines.append(f"| {row['task']} | {METRIC_LABELS.get(row['metric'], row['metric'])} | {score} | {baselines} | "
                     f"{reference} | {row['train_minutes']:.1f} | {row['num_train']:,} / {row['num_test']:,} |")
    return "\n".join(lines) + "\n"


def _kind_of_bench(bench: dict) -> str:
    """'' for a bench of the tasks' own training sets, else what it was: ' (--quick)', ' (500 training examples)'."""
    if bench.get("quick"):
        return " (--quick)"
    cap = bench.get("max_train_examples")
    return f" ({cap:,} training examples)" if cap else ""


def comparison(benches: dict[str, dict]) -> str:
    """The results table of several benches ({row name: bench.json}), as course chapter 7 draws it: a row per
    model, a column per task, the baselines that need no model in the first row and BERT-base's published figures
    in the last. A cell is the mean over seeds, with the spread and the number of seeds when there are several; the
    stsb cell adds the model's own zero-shot cosine, the baseline fine-tuning must beat. A quick or few-examples
    bench says so in its row's name; the baselines' row comes from a bench of the full training sets if any."""
    tasks = list(dict.fromkeys(row["task"] for bench in benches.values() for row in bench["rows"]))
    rows_of = {name: {row["task"]: row for row in bench["rows"]} for name, bench in benches.items()}
    lines = ["| model | " + " | ".join(f"{task} ({METRIC_LABELS.get(TASKS[task].metrics[0])})" for task in tasks)
             + " |", "|---" * (len(tasks) + 1) + "|"]
    ordered = sorted(benches, key=lambda name: _kind_of_bench(benches[name]) != "")  # (a stable sort)
    baselines, kind = [], ""
    for task in tasks:
        found = [(label, value, _kind_of_bench(benches[name])) for name in ordered if task in rows_of[name]
                 for label, value in rows_of[name][task]["baselines"].items() if label != ZERO_SHOT]
        baselines.append(f"{found[0][1]:.1f}, {found[0][0]}" if found else "-")
        kind = kind or (found[0][2] if found else "")
    lines.append(f"| baseline, no pre-training{kind} | " + " | ".join(baselines) + " |")
    for name, rows in rows_of.items():
        cells = []
        for task in tasks:
            row = rows.get(task)
            if row is None:
                cells.append("")
                continue
            n = len(row["seeds"])
            cell = f"{row['mean']:.1f}" + (f" ± {row['std']:.1f} ({n} seeds)" if n > 1 else " (1 seed)")
            own = row["baselines"].get(ZERO_SHOT)
            cells.append(cell + ("" if own is None else f"; zero-shot cosine {own:.1f}"))
        lines.append(f"| {name}{_kind_of_bench(benches[name])} | " + " | ".join(cells) + " |")
    published = [TASKS[task].published for task in tasks]
    lines.append("| BERT-base, published | " + " | ".join("-" if p is None else f"{p.value:.1f}" for p in published)
                 + " |")
    return "\n".join(lines) + "\n"


def compare(paths: list[str]) -> str:
    """`minibert bench --compare`: the comparison() of the benches at `paths` ([NAME=]an --out folder or its
    bench.json; a row is named after its bench's model unless NAME is given). A missing or unreadable bench, or a
    second row of the same name, is one line."""
    benches = {}
    for text in paths:
        name, path = ("", text) if Path(text).exists() else text.partition("=")[::2]  # (a path may hold "=")
        path = Path(path)
        file = path / "bench.json" if path.is_dir() else path
        if not file.is_file():
            raise ValueError(f"--compare {text}: no bench.json there (a `minibert bench --out` folder or its "
                             f"bench.json)")
        try:
            bench = _read(file)
            known = all(row["task"] in TASKS and {"metric", "mean", "std", "seeds", "baselines"} <= set(row)
                        for row in bench["rows"])
        except (ValueError, KeyError, TypeError):
            known = False
        if not known:
            raise ValueError(f"--compare {text}: {file} is not a table `minibert bench` saved (of the built-in "
                             f"tasks {', '.join(TASKS)})")
        name = name or bench.get("model") or str(path)
        if name in benches:
            raise ValueError(f"--compare {text}: a second row named {name!r}; name them: NAME=DIR")
        benches[name] = bench
    return comparison(benches)


def save_chart(bench: dict, path: Path) -> Path | None:
    """Bars per task: minibert, its baselines, BERT-base's published figure. None without matplotlib."""
    from minibert.viz.mpl import new_figure, save_figure

    rows = bench["rows"]
    try:
        fig = new_figure((2.2 + 2.2 * len(rows), 4.2))
    except ImportError:
        return None
    ax = fig.subplots()
    for x, row in enumerate(rows):
        bars = [("minibert", row["mean"], "tab:blue")]
        bars += [(label, value, "tab:gray") for label, value in row["baselines"].items()]
        if row["published"]:
            bars.append(("BERT-base, published", row["published"]["value"], "tab:orange"))
        width = 0.8 / len(bars)
        for j, (_, value, colour) in enumerate(bars):
            ax.bar(x - 0.4 + width * (j + 0.5), value, width, color=colour)
            ax.text(x - 0.4 + width * (j + 0.5), max(value, 0) + 1, f"{value:.0f}", ha="center", fontsize=7)
    ax.set_xticks(range(len(rows)), labels=[f"{r['task']}\n({METRIC_LABELS.get(r['metric'], r['metric'])})"
                                            for r in rows])
    lowest = min([0.0] + [r["mean"] for r in rows] + [v for r in rows for v in r["baselines"].values()])
    ax.set_ylim(min(0.0, lowest - 5), 105)  # (a correlation may be below 0)
    ax.axhline(0, color="black", linewidth=0.6)
    ax.set_ylabel("test score (%)")
    ax.set_title(f"{bench['model']}: blue minibert, grey baselines, orange BERT-base published"
                 + (" (--quick)" if bench["quick"] else ""), fontsize=9)
    save_figure(fig, Path(path))
    return Path(path)


def save_bench(bench: dict, out: Path, log=print) -> None:
    """bench.md, bench.json and bench.png (the chart, when matplotlib is installed) in `out`."""
    text = markdown(bench)
    _write(out / "bench.md", text)
    _write(out / "bench.json", json.dumps(bench, indent=2) + "\n")
    log("\n" + text)
    chart = save_chart(bench, out / "bench.png")
    if chart is None:
        log("note: matplotlib is not installed, so no bench.png (pip install 'minibert[plot]')")
    log(f"saved bench.md, bench.json{' and bench.png' if chart else ''} to {out}/")
