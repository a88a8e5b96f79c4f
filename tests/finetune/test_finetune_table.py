"""benchmarks/finetune_table.py: rows parse as NAME=MODEL|FLAGS, and the table shows each row's mean and spread over
its seeds, per task, with the minutes of its pre-training added."""

import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "finetune_table.py"
spec = importlib.util.spec_from_file_location("finetune_table", SCRIPT)
finetune_table = importlib.util.module_from_spec(spec)
spec.loader.exec_module(finetune_table)


def test_a_row_names_a_model_and_its_flags():
    assert finetune_table.parse_row("tuned=runs/mini|--lr 1e-4 --epochs 10") == (
        "tuned", "runs/mini", ["--lr", "1e-4", "--epochs", "10"])
    assert finetune_table.parse_row("plain = runs/mini") == ("plain", "runs/mini", [])
    with pytest.raises(SystemExit, match="expected NAME=MODEL"):
        finetune_table.parse_row("runs/mini")


def test_the_table_gives_mean_and_standard_deviation_per_task():
    results = [{"row": "a", "task": "drug-reviews", "seed": s, "score": acc, "macro_f1": 0.5, "minutes": 2.0}
               for s, acc in enumerate([0.60, 0.70, 0.80])]
    results.append({"row": "a", "task": "wiki-topics", "seed": 0, "error": ["boom"]})  # a failed run is not averaged
    text = finetune_table.table(results, ["a"], ["drug-reviews", "wiki-topics"], {"a": 13.0})
    assert text.splitlines()[0] == "| row | drug-reviews accuracy | drug-reviews minutes | wiki-topics accuracy | " \
                                   "wiki-topics minutes |"
    row = text.splitlines()[2]
    assert row.startswith("| a | 70.0 +- 10.0 (n=3) (50.0 +- 0.0) | 15.0 |")
    assert row.endswith("|  |  |")


def test_the_baseline_row_of_a_tagging_or_similarity_task_is_what_the_model_runs_computed():
    runs = [{"row": "a", "task": "stsb", "seed": s, "score": 0.3, "macro_f1": None, "minutes": 1.0,
             "baselines": {"TF-IDF cosine": 64.0 + 2 * s, "zero-shot cosine of the starting model": 45.0}}
            for s in (0, 1)]
    text = finetune_table.table(runs, ["a", "TF-IDF"], ["stsb"], {})
    assert text.splitlines()[0] == "| row | stsb Spearman | stsb minutes |"
    assert text.splitlines()[2] == "| a | 30.0 +- 0.0 (n=2) | 1.0 |"  # (no macro-F1 for a regression)
    assert text.splitlines()[3] == "| TF-IDF | 65.0 +- 1.4 (n=2, TF-IDF cosine) |  |"


def test_a_column_may_cap_the_labelled_examples_and_each_run_gets_its_flags():
    assert finetune_table.parse_column("imdb:500") == ("imdb", 500)
    assert finetune_table.parse_column("conll2003") == ("conll2003", None)
    for wrong in ("imdb:0", "imdb:many", "sst2"):
        with pytest.raises(SystemExit, match="expected a built-in task"):
            finetune_table.parse_column(wrong)
    model = {"row": "m", "model": "runs/mini", "flags": ["--lr", "1e-3"], "seed": 2}
    few = finetune_table._command({**model, "task": "imdb:500"}, "out")
    assert few[few.index("--max-train-examples") + 1] == "500" and few[-2:] == ["--lr", "1e-3"]
    assert "--baseline" not in few  # (its baseline is the TF-IDF row's own run)
    assert finetune_table._command({**model, "task": "stsb"}, "out")[-1] == "--baseline"
    tfidf = finetune_table._command({"row": "TF-IDF", "model": None, "flags": [], "seed": 2, "task": "imdb:500"}, "o")
    assert tfidf[-1] == "--baseline-only" and "--model" not in tfidf and "500" in tfidf


def test_a_saved_table_prints_again_as_it_printed_and_keeps_no_paths(tmp_path):
    results = [{"row": "a", "model": "/somewhere/runs/mini", "flags": [], "task": "imdb", "seed": s, "score": acc,
                "macro_f1": acc - 0.01, "minutes": 0.5, "settings": {"lr": 5e-4}} for s, acc in ((1, 0.7), (0, 0.6))]
    results += [{"row": "a", "task": "imdb:500", "seed": 0, "error": ["boom"]},  # (a failed run is not kept)
                {"row": "b", "model": "x", "task": "imdb", "seed": 0, "score": 0.9, "minutes": 1.0},
                {"row": "TF-IDF", "model": None, "task": "imdb", "seed": 0, "accuracy": 0.8, "macro_f1": 0.8,
                 "minutes": 0.1}]  # (a run recorded before "score" was the key)
    rows, tasks, pre = ["a", "TF-IDF"], ["imdb", "imdb:500"], {"a": 13.0}
    path = tmp_path / "table.json"
    finetune_table.save(path, results, rows, tasks, pre)
    assert finetune_table.saved_table(str(path)) == finetune_table.table(results, rows, tasks, pre)
    text = path.read_text()
    assert "somewhere" not in text and "settings" not in text and '"b"' not in text
    assert [r["seed"] for r in json.loads(text)["runs"]] == [0, 1, 0]  # (rows, then tasks, then seeds in order)
    assert not list(tmp_path.glob("*.tmp"))
    path.write_text("{}")
    with pytest.raises(SystemExit, match="table.json: not a table saved by --save"):
        finetune_table.saved_table(str(path))


def test_a_continued_run_counts_the_minutes_of_the_run_it_started_from(tmp_path):
    def run(name, seconds, init=None):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "summary.json").write_text(json.dumps({"wall_seconds": seconds}))
        (folder / "settings.json").write_text(json.dumps({"init": init}))
        return str(folder)

    wiki = run("wiki", 780.0)
    reviews = run("reviews", 600.0, init=wiki)
    assert finetune_table.pretraining_minutes(wiki) == 13.0
    assert finetune_table.pretraining_minutes(reviews) == 23.0
    assert finetune_table.pretraining_minutes(run("from-minilm", 60.0, init=str(tmp_path / "minilm"))) == 1.0
    assert finetune_table.pretraining_minutes(str(tmp_path / "minilm")) is None  # (not a pretrain run: no minutes)
