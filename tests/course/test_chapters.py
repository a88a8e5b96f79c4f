"""Every chapter of the course runs as a notebook in a real Jupyter kernel, in quick mode, and its checks hold.

Each runs the way a learner opens it: built by course/build.py, its kernel started in the folder the notebook is
written to (build/course/ here, course/notebooks/ for the learner), where no file of the course lies beside it.
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
    import nbformat
    assert not any(cell.get("outputs") for cell in build.build_notebook(source).cells), \
        "a chapter source carries no outputs"
    build.main([source.stem, "--execute", "--quick", "--out", str(EXECUTED)])
    notebook = nbformat.read(EXECUTED / (source.stem + ".ipynb"), as_version=4)
    assert notebook.metadata[build.RUN_KEY]["mode"] == "quick"
    errors = [out for cell in notebook.cells for out in cell.get("outputs", []) if out.get("output_type") == "error"]
    assert not errors
    assert any(cell.get("outputs") for cell in notebook.cells), "the executed notebook keeps its outputs"


def test_the_kernel_starts_in_the_notebooks_folder(tmp_path, monkeypatch):
    pytest.importorskip("nbclient")
    monkeypatch.delenv("MINIBERT_COURSE_QUICK", raising=False)
    import nbformat
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import os\nprint(os.getcwd())")])
    build.execute(notebook, tmp_path / "notebooks")
    assert notebook.cells[0].outputs[0]["text"].strip() == str(tmp_path / "notebooks")
    assert notebook.metadata[build.RUN_KEY]["mode"] == "full"


@pytest.mark.parametrize("source", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_chapter_has_exercises_with_solutions(source):
    text = source.read_text(encoding="utf-8")
    assert "## Exercises" in text, f"{source.name}: no '## Exercises' section"
    assert (ROOT / "course" / "solutions" / source.name).exists(), f"no course/solutions/{source.name}"
