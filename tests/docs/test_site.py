"""The documentation site (scripts/docs.py, mkdocs.yml) builds strictly, a broken link or anchor fails its build,
and a real browser shows its home page and a course chapter.

In pytest-xdist group "course", after tests/course/test_chapters.py on the same worker, so the chapters' pages show
the outputs those tests just wrote to build/course/ (or a learner's full run in course/notebooks/). Without them the
pages show the code alone: whether the build passes does not depend on the order.
"""

from __future__ import annotations

import functools
import http.server
import json
import logging
import re
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "tests" / "viz"))

for module in ("mkdocs", "material", "mkdocs_jupyter", "jupytext"):
    pytest.importorskip(module, reason=f"{module} is not installed: pip install -e '.[docs]'")

import docs  # noqa: E402  (scripts/docs.py)

pytestmark = pytest.mark.xdist_group("course")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The repository's site, built strictly into a temporary folder: (site folder, staging folder)."""
    out = tmp_path_factory.mktemp("docs")
    result = docs.build(out=out / "stage", site_dir=out / "site", quiet=True)
    problems = [line for line in result.stdout.splitlines() if line.startswith(("WARNING", "ERROR", "Aborted"))]
    assert result.returncode == 0, "mkdocs build --strict failed:\n" + "\n".join(problems or [result.stdout[-4000:]])
    return out / "site", out / "stage"


def page_of(site_dir: Path, staged: str) -> Path:
    """Where mkdocs (directory URLs) writes a staged file's page: docs/tokenizer.md -> docs/tokenizer/index.html."""
    stem = staged.rsplit(".", 1)[0]
    if Path(stem).name == "README":
        return site_dir / Path(stem).parent / "index.html"
    return site_dir / stem / "index.html"


def test_every_page_is_built(site):
    site_dir, stage_dir = site
    expected = ["README.md", "CHANGELOG.md"] + [f"docs/{p.name}" for p in sorted((ROOT / "docs").glob("*.md"))]
    expected += [f"course/{p.stem}.ipynb" for p in docs.chapter_sources(ROOT)]
    if (ROOT / "course" / "README.md").exists():
        expected.append("course/README.md")
    missing = [name for name in expected if not page_of(site_dir, name).is_file()]
    assert not missing, f"no page for {missing}"
    nav = json.loads((stage_dir / "mkdocs.yml").read_text())["nav"]
    listed = json.dumps(nav)
    assert all(name in listed for name in expected), f"not in the navigation: {nav}"


def test_the_readme_links_to_source_files_that_the_site_shows(site):
    site_dir, _ = site
    home = (site_dir / "index.html").read_text(encoding="utf-8")
    assert 'href="minibert/layers/attention.py/"' in home
    code = (site_dir / "minibert" / "layers" / "attention.py" / "index.html").read_text(encoding="utf-8")
    assert "self_attention_backward" in code


NOTES = {"full": "Outputs of a full run", "quick": "Outputs of a quick run", None: "No outputs:"}


def test_executed_chapters_show_their_outputs_and_say_which_run(site):
    site_dir, _ = site
    for source in docs.chapter_sources(ROOT):
        _, mode = docs.chapter_notebook(source, docs.EXECUTED, ROOT / "course" / "notebooks")
        html = page_of(site_dir, f"course/{source.stem}.ipynb").read_text(encoding="utf-8")
        assert ('class="jp-OutputArea-child' in html) == (mode is not None), source.name  # an output cell
        assert [note for note in NOTES.values() if note in html] == [NOTES[mode]], source.name


def test_each_chapter_page_offers_its_notebook_to_download(site):
    site_dir, _ = site
    for source in docs.chapter_sources(ROOT):
        page = page_of(site_dir, f"course/{source.stem}.ipynb")
        assert re.search(rf'<a href="{source.stem}\.ipynb" download class="[^"]*jp-DownloadNB',
                         page.read_text(encoding="utf-8")), source.name
        assert json.loads((page.parent / f"{source.stem}.ipynb").read_text(encoding="utf-8"))["cells"]


def test_escaped_pipes_in_table_code_show_as_pipes(site):
    site_dir, _ = site
    assert "wiki\\|ptb" in (ROOT / "README.md").read_text(encoding="utf-8")  # as GitHub needs it
    home = (site_dir / "index.html").read_text(encoding="utf-8")
    assert "wiki|ptb|wikitext2|imdb|FILES" in home and "\\|" not in home


def test_mathjax_is_served_with_the_site(site):
    site_dir, _ = site
    assert (site_dir / "assets" / "mathjax" / "MathJax.js").is_file()
    assert (site_dir / "assets" / "mathjax" / "config" / "local" / "minibert.js").is_file()  # scripts/docs_theme/
    assert (site_dir / "assets" / "minibert.css").is_file()
    chapter = page_of(site_dir, f"course/{docs.chapter_sources(ROOT)[0].stem}.ipynb").read_text(encoding="utf-8")
    scripts = re.findall(r'<script[^>]*\bsrc="([^"]+)"', chapter)
    assert any(src.startswith("../../assets/mathjax/MathJax.js?") for src in scripts), scripts
    assert not [src for src in scripts if "://" in src], "a script from elsewhere than the site"


# ------------------------------------------------------------------- which run a chapter's page shows
def write_notebook(path: Path, mode: str | None, cells=("print(1)",)):
    import nbformat
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    if mode:
        notebook.metadata[docs.RUN_KEY] = {"mode": mode, "executed": "2026-11-29 07:00 UTC"}
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, str(path))


@pytest.mark.parametrize("present, stale, shown", [
    ((), (), None),                                 # nothing executed: the code alone
    (("quick",), (), "quick"),                      # the tests' run
    (("quick", "full"), (), "full"),                # a learner's full run wins over the tests'
    (("quick", "full"), ("full",), "quick"),        # ... unless the chapter changed since
    (("quick", "full"), ("full", "quick"), None),   # both older than the source
    (("quick", "built"), (), "quick"),              # a notebook built but not executed is no run
    (("learner-quick",), (), "quick"),              # a learner's --quick run, where the tests left none
])
def test_a_chapter_page_shows_the_newest_run_it_can(tmp_path, present, stale, shown):
    import os
    source = tmp_path / "course" / "04_attention.py"
    source.parent.mkdir(parents=True)
    source.write_text("# %% [markdown]\n# # 4. Attention\n\n# %%\nprint(1)\n", encoding="utf-8")
    learner = tmp_path / "course" / "notebooks"
    folders = {"quick": tmp_path / "executed", "full": learner, "built": learner, "learner-quick": learner}
    for kind in present:
        write_notebook(folders[kind] / "04_attention.ipynb", {"built": None, "learner-quick": "quick"}.get(kind, kind))
        if kind in stale:
            os.utime(folders[kind] / "04_attention.ipynb", (1, 1))
    data, mode = docs.chapter_notebook(source, folders["quick"], folders["full"])
    assert mode == shown
    notebook = json.loads(data)
    assert "".join(notebook["cells"][1]["source"]).startswith("> **" + NOTES[shown].rstrip(":"))


# ------------------------------------------------------------------------- a small site that must not build
GOOD = {
    "README.md": "# Tool\n\nSee [the guide](docs/guide.md#options) and [the code](tool/core.py).\n",
    "docs/guide.md": "# Guide\n\n## Options\n\nBack [home](../README.md).\n",
    "tool/core.py": "def f():\n    return 1\n",
}
BROKEN = {
    "missing-page": ("README.md", "[gone](docs/no-such-page.md)", "no-such-page.md"),
    "missing-anchor": ("README.md", "[gone](docs/guide.md#no-such-heading)", "no-such-heading"),
    "missing-source-file": ("docs/guide.md", "[gone](../tool/no_such_module.py)", "no_such_module.py"),
    "outside-the-repository": ("docs/guide.md", "[gone](../../elsewhere.md)", "elsewhere.md"),
}


class Warnings(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def build_small_site(tmp_path, files, monkeypatch):
    """Stage a small repository as scripts/docs.py does and build it with the site's config, in this process (a
    mkdocs process per case would start the theme again each time): (whether it built, mkdocs' warnings)."""
    from mkdocs.commands.build import build
    monkeypatch.chdir(tmp_path)  # mkdocs-jupyter keeps its cache in .cache/ of the working directory
    from mkdocs.config import load_config
    from mkdocs.exceptions import Abort
    root = tmp_path / "repo"
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    config, _ = docs.stage(root, tmp_path / "stage", tmp_path / "executed", tmp_path / "site")
    warnings = Warnings()
    logging.getLogger("mkdocs").addHandler(warnings)
    try:
        build(load_config(str(config)))
        built = True
    except Abort:
        built = False
    finally:
        logging.getLogger("mkdocs").removeHandler(warnings)
    return built, warnings.messages


def test_a_small_site_with_good_links_builds(tmp_path, monkeypatch):
    built, warnings = build_small_site(tmp_path, GOOD, monkeypatch)
    assert built and not warnings, warnings
    assert (tmp_path / "site" / "tool" / "core.py" / "index.html").is_file()


def test_a_folder_without_readme_gets_a_page_that_lists_its_files(tmp_path, monkeypatch):
    files = dict(GOOD, **{"tool/helpers.py": "X = 1\n", "tool/__pycache__/core.pyc": "",
                          "tool/data/rows.csv": "a,b\n"})
    files["README.md"] += "\nAll of [the tool](tool/).\n"
    built, warnings = build_small_site(tmp_path, files, monkeypatch)
    assert built and not warnings, warnings
    listing = (tmp_path / "stage" / "src" / "tool" / "index.md").read_text()
    assert listing == "# tool/\n\n- [core.py](core.py.md)\n- data/\n- [helpers.py](helpers.py.md)\n"
    assert (tmp_path / "site" / "tool" / "helpers.py" / "index.html").is_file()


def test_a_linked_folder_of_docs_data_lists_its_files_as_they_are(tmp_path, monkeypatch):
    files = dict(GOOD, **{"docs/tables/a.json": "{}\n"})
    files["docs/guide.md"] += "\nThe tables: [a.json](tables/a.json), all of them in [tables/](tables/).\n"
    built, warnings = build_small_site(tmp_path, files, monkeypatch)
    assert built and not warnings, warnings  # (a code page of a.json would take the address of a.json itself)
    assert (tmp_path / "stage" / "src" / "docs" / "tables" / "index.md").read_text() == \
        "# docs/tables/\n\n- [a.json](a.json)\n"
    assert (tmp_path / "site" / "docs" / "tables" / "a.json").read_text() == "{}\n"


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_a_broken_link_fails_the_strict_build(tmp_path, kind, monkeypatch):
    page, link, named = BROKEN[kind]
    files = dict(GOOD)
    files[page] += f"\nA broken link: {link}.\n"
    built, warnings = build_small_site(tmp_path, files, monkeypatch)
    assert not built, f"the site built with {link}"
    assert len(warnings) == 1 and named in warnings[0], warnings


# ------------------------------------------------------------------------------------- in a real browser
@pytest.fixture
def served(site):
    """The built site over HTTP on a free local port (file:// would stop the theme's scripts)."""
    handler = functools.partial(QuietHandler, directory=str(site[0]))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


HEADINGS = "return [...document.querySelectorAll('article h1, article h2')].map(h => h.textContent.trim())"


def test_home_page_and_a_chapter_in_headless_chromium(served, browser, tmp_path):
    browser.get(served)
    browser.wait_for("return document.readyState === 'complete'")
    headings = browser.run_js(HEADINGS)
    assert headings[0].startswith("minibert"), headings
    assert any(h.startswith("Learn") for h in headings), headings
    assert "minibert/layers/attention.py" in browser.run_js(
        "return [...document.querySelectorAll('article a')].map(a => a.getAttribute('href')).join(' ')")
    # the navigation the theme draws lists the course
    assert "Course" in browser.run_js("return document.querySelector('nav.md-nav--primary').textContent")
    assert not browser.console_errors()

    chapters = docs.chapter_sources(ROOT)
    if not chapters:
        pytest.skip("the course has no chapter yet (course/NN_name.py)")
    chapter = chapters[0]
    browser.get(served + f"course/{chapter.stem}/")
    browser.wait_for("return document.readyState === 'complete'")
    headings = browser.run_js(HEADINGS)
    first_heading = next(line.lstrip("# ").strip() for line in chapter.read_text(encoding="utf-8").splitlines()
                         if line.startswith("# # "))
    assert headings and headings[0].rstrip("¶").strip() == first_heading, (headings, first_heading)
    assert browser.run_js("return document.querySelectorAll('.jp-Cell').length") > 1
    assert not browser.console_errors()


# TeX left as typed: $$...$$, \(...\), \[...\] or $...$ on one line.
RAW_TEX = r"/\$\$|\\\(|\\\[|\$[^$\n]+\$/.test(document.querySelector('article').innerText)"
FORMULAS = "return document.querySelectorAll('article .MathJax, article .MathJax_Display').length"
CODE_OVERFLOW = ("return [...document.querySelectorAll('article .jp-InputArea-editor pre')]"
                 ".filter(pre => pre.scrollWidth > pre.clientWidth).map(pre => pre.textContent.slice(0, 60))")


def test_the_attention_chapter_typesets_its_formulas_offline_and_its_code_fits(served, browser):
    """Chapter 4 has the course's most maths: MathJax, served with the site (the browser reaches nothing else),
    typesets every formula, and at 1280 pixels no line of its code needs a scroll bar."""
    source = next((p for p in docs.chapter_sources(ROOT) if p.stem.startswith("04_")), None)
    if source is None:
        pytest.skip("no chapter 04")
    assert re.search(r"\$[^$\n]+\$", source.read_text(encoding="utf-8")), "chapter 04 has formulas"
    assert max(len(line) for line in source.read_text(encoding="utf-8").splitlines()) > 100
    browser.set_window_size(1280, 900)
    browser.get(served + f"course/{source.stem}/")
    browser.wait_for("return document.readyState === 'complete'")
    browser.wait_for(FORMULAS, timeout=30)
    browser.wait_for(f"return !{RAW_TEX}", timeout=30)
    assert browser.run_js(FORMULAS) > 10
    assert browser.run_js(CODE_OVERFLOW) == []
    assert not browser.console_errors()  # nothing failed to load
