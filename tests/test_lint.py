"""Hygiene: `ruff check` passes with the project's rules (ruff.toml), and no file grows past ~450 lines nor any
function past ~100 without a one-line reason here."""

import ast
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHECKED = ("minibert", "tests", "benchmarks", "scripts")
MAX_FILE_LINES = 450
MAX_FUNCTION_LINES = 100

# Files and functions allowed to be longer, each with why.
LONG_FILES = {
    "minibert/training/pretrain.py": "the pre-training recipe: set-up, the loop and the summary; the tests patch "
                                     "its names (evaluate, prepare_data, ShardedAdamW, ...), so they stay together",
    "minibert/training/procs.py": "the --procs communicator: starting the ranks, their sockets and shared memory, "
                                  "and stopping them all on an error or Ctrl-C, as one class",
}
LONG_FUNCTIONS = {
    "minibert/commands/pretrain.py:add_arguments": "one argparse option after another: a table of options, not logic",
    "minibert/commands/predict.py:run": "the command read top to bottom: load, check, predict, write",
    "minibert/commands/finetune.py:add_arguments": "one argparse option after another: a table of options, not logic",
    "minibert/commands/finetune.py:_run_sequence": "the command read top to bottom: check, load, tokenize, train, "
                                                   "test, write",
    "benchmarks/pretrain_reference.py:main": "a benchmark's one scenario, read top to bottom",
}


def test_ruff_check_passes():
    ruff = shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed (pip install ruff)")
    result = subprocess.run([ruff, "check", "--no-cache", *CHECKED], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, f"ruff check (rules: ruff.toml) found:\n{result.stdout}{result.stderr}"


def long_parts(root: Path, folders=CHECKED) -> tuple[dict[str, int], dict[str, int]]:
    """({file: lines} over MAX_FILE_LINES, {file:function: lines} over MAX_FUNCTION_LINES) of the .py files under
    `folders` of `root`, paths relative to root with forward slashes."""
    files, functions = {}, {}
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            name = path.relative_to(root).as_posix()
            source = path.read_text(encoding="utf-8")
            if len(source.splitlines()) > MAX_FILE_LINES:
                files[name] = len(source.splitlines())
            for node in ast.walk(ast.parse(source, filename=name)):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    lines = node.end_lineno - node.lineno + 1
                    if lines > MAX_FUNCTION_LINES:
                        functions[f"{name}:{node.name}"] = lines
    return files, functions


def test_long_parts_are_found(tmp_path):
    (tmp_path / "pkg").mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    (tmp_path / "pkg" / "long.py").write_text(f"def short():\n    return 1\n\n\ndef long():\n{body}\n")
    (tmp_path / "pkg" / "big.py").write_text("\n".join(f"y{i} = {i}" for i in range(MAX_FILE_LINES + 1)) + "\n")
    assert long_parts(tmp_path, ["pkg"]) == ({"pkg/big.py": MAX_FILE_LINES + 1},
                                             {"pkg/long.py:long": MAX_FUNCTION_LINES + 1})


def test_no_long_file_or_function_without_a_reason():
    files, functions = long_parts(ROOT)
    unexplained = [f"{name}: {n} lines" for name, n in files.items() if name not in LONG_FILES]
    unexplained += [f"{name}: {n} lines" for name, n in functions.items() if name not in LONG_FUNCTIONS]
    assert not unexplained, (f"over {MAX_FILE_LINES} lines per file or {MAX_FUNCTION_LINES} per function: split "
                             f"them, or say why in tests/test_lint.py:\n  " + "\n  ".join(unexplained))
    stale = sorted(set(LONG_FILES) - set(files)) + sorted(set(LONG_FUNCTIONS) - set(functions))
    assert not stale, f"no longer long (remove them from tests/test_lint.py): {stale}"
