"""Every chapter of the course runs as a notebook in a real Jupyter kernel, in quick mode, and its checks hold.

The executed notebooks are kept in build/course/ for the documentation site (tests/docs/), which runs after these
in the same pytest-xdist group."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "course"))

import build  # noqa: E402  (course/build.py)

CHAPTERS = build.chapters()
EXECUTED = ROOT / "build" / "course"


def test_the_course_has_its_chapters():
    assert [p.stem[:2] for p in CHAPTERS] == [f"{n:02d}" for n in range(1, len(CHAPTERS) + 1)]
    assert len(CHAPTERS) >= 1


@pytest.mark.xdist_group("course")
@pytest.mark.parametrize("source", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_chapter_runs_in_a_jupyter_kernel(source):
    pytest.importorskip("nbclient")
    pytest.importorskip("jupytext")
    notebook = build.build_notebook(source)
    assert not any(cell.get("outputs") for cell in notebook.cells), "a chapter source carries no outputs"
    build.execute(notebook, quick=True)
    build.write_atomically(notebook, EXECUTED / (source.stem + ".ipynb"))
    errors = [out for cell in notebook.cells for out in cell.get("outputs", []) if out.get("output_type") == "error"]
    assert not errors


@pytest.mark.parametrize("source", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_chapter_has_exercises_with_solutions(source):
    text = source.read_text(encoding="utf-8")
    assert "## Exercises" in text, f"{source.name}: no '## Exercises' section"
    assert (ROOT / "course" / "solutions" / source.name).exists(), f"no course/solutions/{source.name}"
