"""The documentation site (scripts/docs.py, mkdocs.yml) builds strictly, a broken link or anchor fails its build,
and a real browser shows its home page and a course chapter.

In pytest-xdist group "course", after tests/course/test_chapters.py on the same worker, so the chapters' pages show
the outputs those tests just wrote to build/course/. Without them the pages show the code alone: whether the build
passes does not depend on the order.
"""

from __future__ import annotations

import functools
import http.server
import json
import logging
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


def test_executed_chapters_show_their_outputs(site):
    site_dir, _ = site
    for source in docs.chapter_sources(ROOT):
        _, executed = docs.chapter_notebook(source, docs.EXECUTED)
        html = page_of(site_dir, f"course/{source.stem}.ipynb").read_text(encoding="utf-8")
        assert ('class="jp-OutputArea-child' in html) == executed, source.name  # an output cell


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
    # MathJax comes from its CDN (mkdocs.yml): without a network only that load may fail; the page still shows
    errors = [e for e in browser.console_errors() if not e.get("message", "").startswith(MATHJAX)]
    assert not errors, errors


MATHJAX = "https://cdn.jsdelivr.net/npm/mathjax@"
