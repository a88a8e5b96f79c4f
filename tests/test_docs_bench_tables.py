"""The results tables of the built-in tasks in the docs are printed from the saved runs in docs/bench/, not typed by
hand: each `minibert bench --compare ...` or `python benchmarks/finetune_table.py --from ...` command quoted in a
doc is followed by the table it prints, and this test runs it again and compares."""

from __future__ import annotations

import importlib.util
import re
import shlex
from pathlib import Path

import pytest

from minibert.finetune.bench import compare

ROOT = Path(__file__).resolve().parents[1]
COMMAND = re.compile(r"`minibert bench --compare ([^`]*docs/bench/[^`]+)`")  # (one that reads the saved benches)
SAVED = re.compile(r"`python benchmarks/finetune_table.py --from (docs/bench/[^`\s]+)`")

_spec = importlib.util.spec_from_file_location("finetune_table", ROOT / "benchmarks" / "finetune_table.py")
finetune_table = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(finetune_table)


def quoted_tables(path: Path, command: re.Pattern = COMMAND) -> list[tuple[list[str], str]]:
    """(the command's arguments, the Markdown table that follows it) for each quoted command in the doc."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found = []
    for i, line in enumerate(lines):
        for match in command.finditer(line):
            start = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("|"))
            end = next((j for j in range(start, len(lines)) if not lines[j].startswith("|")), len(lines))
            found.append((shlex.split(match.group(1)), "\n".join(lines[start:end]) + "\n"))
    return found


def test_the_results_page_quotes_the_comparison():
    assert quoted_tables(ROOT / "docs" / "results.md"), "docs/results.md quotes no `minibert bench --compare`"


@pytest.mark.parametrize("doc", sorted(path.name for path in (ROOT / "docs").glob("*.md")
                                        if COMMAND.search(path.read_text(encoding="utf-8"))))
def test_each_quoted_table_is_what_the_command_prints(doc, monkeypatch):
    monkeypatch.chdir(ROOT)  # (the commands name docs/bench/*.json from the repository's root)
    for arguments, table in quoted_tables(ROOT / "docs" / doc):
        assert table == compare(arguments), f"docs/{doc}: the table after `minibert bench --compare " \
                                            f"{shlex.join(arguments)}` is not what it prints now"


@pytest.mark.parametrize("doc", sorted(path.name for path in (ROOT / "docs").glob("*.md")
                                        if SAVED.search(path.read_text(encoding="utf-8"))))
def test_each_quoted_fine_tuning_table_is_what_the_script_prints(doc, monkeypatch):
    monkeypatch.chdir(ROOT)
    for (saved,), table in quoted_tables(ROOT / "docs" / doc, SAVED):
        assert table == finetune_table.saved_table(saved) + "\n", \
            f"docs/{doc}: the table after `python benchmarks/finetune_table.py --from {saved}` is not what it prints"
