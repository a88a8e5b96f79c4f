"""benchmarks/finetune_table.py: rows parse as NAME=MODEL|FLAGS, and the table shows each row's mean and spread over
its seeds, per task, with the minutes of its pre-training added."""

import importlib.util
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
    results = [{"row": "a", "task": "drug-reviews", "seed": s, "accuracy": acc, "macro_f1": 0.5, "minutes": 2.0}
               for s, acc in enumerate([0.60, 0.70, 0.80])]
    results.append({"row": "a", "task": "wiki-topics", "seed": 0, "error": ["boom"]})  # a failed run is not averaged
    text = finetune_table.table(results, ["a"], ["drug-reviews", "wiki-topics"], {"a": 13.0})
    row = text.splitlines()[2]
    assert row.startswith("| a | 70.0 +- 10.0 (n=3) | 50.0 +- 0.0 | 15.0 |")
    assert row.endswith("|  |  |  |")
