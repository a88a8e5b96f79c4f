"""The guides in docs/ stay short enough to read in one sitting: a page that outgrows 25 KB is split into pages
that link to each other (as docs/finetuning.md and docs/finetuning-ner-qa.md do)."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 25_000


def test_every_page_of_docs_is_under_25_kb():
    pages = sorted((ROOT / "docs").glob("*.md"))
    assert len(pages) >= 10
    too_long = {p.name: p.stat().st_size for p in pages if p.stat().st_size >= LIMIT}
    assert not too_long, f"over {LIMIT:,} bytes, split them: {too_long}"


def test_a_split_page_links_to_its_parts():
    for page, parts in {"finetuning.md": ["finetuning-ner-qa.md", "finetuning-does-pretraining-pay.md"],
                        "pretraining.md": ["pretraining-steps.md"], "experiments.md": ["experiments-code.md"]}.items():
        text = (ROOT / "docs" / page).read_text(encoding="utf-8")
        for part in parts:
            assert f"]({part})" in text, f"docs/{page} does not link to {part}"
            assert f"]({page})" in (ROOT / "docs" / part).read_text(encoding="utf-8"), f"{part} does not link back"
