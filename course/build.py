"""Build the course's notebooks from their text sources, and optionally run them in a Jupyter kernel.

    python course/build.py                  course/NN_name.py -> course/notebooks/NN_name.ipynb (no outputs)
    python course/build.py --execute        ... and run each in a real Jupyter kernel, saving its outputs
    python course/build.py --execute --quick 04     only chapter 04, in quick mode (what the tests run)
    jupyter lab course/notebooks            then open them

The kernel starts in the folder the notebooks are written to, as JupyterLab starts it when a learner opens one:
the tests run the chapters through this same path. An executed notebook records how it ran (full or quick mode)
in its metadata, which the documentation site shows on the chapter's page.

The chapters are kept in git as jupytext "percent" scripts (readable diffs, no outputs); the .ipynb files are
built, never committed.
"""

import argparse
import datetime
import os
import sys
import time
from pathlib import Path

COURSE = Path(__file__).resolve().parent
NOTEBOOKS = COURSE / "notebooks"
RUN_KEY = "minibert_course"  # notebook metadata: {"mode": "full" | "quick", "executed": "YYYY-MM-DD HH:MM UTC"}


def chapters(selected=()):
    """The chapter sources in order (course/NN_name.py), or those whose number or name starts with a selection."""
    found = sorted(p for p in COURSE.glob("[0-9][0-9]_*.py"))
    if not selected:
        return found
    picked = [p for p in found if any(p.stem.startswith(s) or p.stem[3:].startswith(s) for s in selected)]
    missing = [s for s in selected if not any(p.stem.startswith(s) or p.stem[3:].startswith(s) for p in found)]
    if missing:
        raise SystemExit(f"course/build.py: no chapter matches {', '.join(missing)} "
                         f"(chapters: {', '.join(p.stem for p in found)})")
    return picked


def build_notebook(source):
    """The notebook of one chapter source (jupytext percent format), with a Python 3 kernel and no outputs."""
    import jupytext
    notebook = jupytext.read(source)
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook.metadata.pop("jupytext", None)
    return notebook


def execute(notebook, folder, timeout=600, quick=False):
    """Run every cell in a real Jupyter kernel started in `folder` (where the notebook is written, as JupyterLab
    does); raises on the first cell that raises (nbclient's CellExecutionError names the cell)."""
    from nbclient import NotebookClient
    quick = quick or os.environ.get("MINIBERT_COURSE_QUICK") == "1"
    # The kernel inherits this process's environment: quick mode goes through it, and a non-interactive
    # MPLBACKEND (Agg, as the tests set) must not, or the notebook would keep no figures.
    env = {"MINIBERT_COURSE_QUICK": "1" if quick else None, "MPLBACKEND": None}
    saved = {name: os.environ.get(name) for name in env}
    for name, value in env.items():
        set_env(name, value)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        NotebookClient(notebook, timeout=timeout, kernel_name="python3",
                       resources={"metadata": {"path": str(folder)}}).execute()
    finally:
        for name, value in saved.items():
            set_env(name, value)
    notebook.metadata[RUN_KEY] = {"mode": "quick" if quick else "full",
                                  "executed": f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC"}
    return notebook


def set_env(name, value):
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


def write_atomically(notebook, path):
    import nbformat
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    nbformat.write(notebook, str(tmp))
    os.replace(tmp, path)


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Build the course's notebooks from course/NN_name.py (jupytext percent scripts) and, with "
                    "--execute, run them in a Jupyter kernel so they carry their outputs and figures.")
    parser.add_argument("chapters", nargs="*", help="chapter numbers or names (default: all), e.g. 04 attention")
    parser.add_argument("--execute", action="store_true", help="run each notebook in a Jupyter kernel")
    parser.add_argument("--quick", action="store_true",
                        help="with --execute: quick mode (MINIBERT_COURSE_QUICK=1: fewer steps, smaller slices)")
    parser.add_argument("--out", type=Path, default=NOTEBOOKS,
                        help="folder for the .ipynb files (default: course/notebooks)")
    args = parser.parse_args(argv)
    for source in chapters(args.chapters):
        start = time.perf_counter()
        notebook = build_notebook(source)
        if args.execute:
            execute(notebook, args.out, quick=args.quick)
        target = args.out / (source.stem + ".ipynb")
        write_atomically(notebook, target)
        ran = f", ran in {time.perf_counter() - start:.0f} s" if args.execute else ""
        print(f"{source.relative_to(COURSE.parent)} -> {target}{ran}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
