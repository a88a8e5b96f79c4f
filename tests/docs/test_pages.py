"""The guides in docs/ stay short enough to read in one sitting: a page that outgrows 25 KB is split into pages
that link to each other (as docs/finetuning.md and docs/finetuning-ner-qa.md do). Their tables render as tables:
no row is cut off from its header by a blank line."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 25_000


def test_every_page_of_docs_is_under_25_kb():
    pages = sorted((ROOT / "docs").glob("*.md"))
    assert len(pages) >= 10
    too_long = {p.name: p.stat().st_size for p in pages if p.stat().st_size >= LIMIT}
    assert not too_long, f"over {LIMIT:,} bytes, split them: {too_long}"


def rows_without_a_header(text: str) -> list[int]:
    """Line numbers of table rows that start a table with no `|---|` line under them: a blank line inside a table
    makes Markdown print its later rows as plain text."""
    lines, fenced, orphans = text.split("\n"), False, []
    for i, line in enumerate(lines):
        if line.startswith("```"):
            fenced = not fenced
        if fenced or not line.startswith("|") or (i and lines[i - 1].startswith("|")):
            continue
        if not re.match(r"\|?\s*:?-{3,}", lines[i + 1] if i + 1 < len(lines) else ""):
            orphans.append(i + 1)
    return orphans


def test_a_table_split_by_a_blank_line_is_found():
    table = "| a | b |\n|---|---|\n| 1 | 2 |\n"
    assert rows_without_a_header(table) == []
    assert rows_without_a_header(table + "\n| 3 | 4 |\n") == [5]
    assert rows_without_a_header("```\n| a shell pipe |\n```\n") == []


def test_every_table_row_of_the_docs_is_under_a_header():
    pages = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md", ROOT / "CHANGELOG.md"]
    broken = {p.name: rows for p in pages if (rows := rows_without_a_header(p.read_text(encoding="utf-8")))}
    assert not broken, f"table rows that Markdown shows as text (a blank line inside a table?): {broken}"


def test_a_split_page_links_to_its_parts():
    split = {"finetuning.md": ["finetuning-ner-qa.md", "finetuning-does-pretraining-pay.md"],
             "pretraining.md": ["pretraining-steps.md"],
             "experiments.md": ["experiments-code.md", "experiments-text-like-the-task.md"]}
    for page, parts in split.items():
        text = (ROOT / "docs" / page).read_text(encoding="utf-8")
        for part in parts:
            assert f"]({part})" in text, f"docs/{page} does not link to {part}"
            assert f"]({page})" in (ROOT / "docs" / part).read_text(encoding="utf-8"), f"{part} does not link back"
