"""Build or serve the documentation site: the README as home page, the guides in docs/, the course's chapters.

    python scripts/docs.py build      stage the pages into build/docs/src/, then `mkdocs build --strict` -> build/site/
    python scripts/docs.py serve      the same, served at http://127.0.0.1:8000 and rebuilt when a page changes

mkdocs reads its pages from one folder, so this script stages one (mkdocs.yml says why mkdocs):
- README.md (the home page: mkdocs makes a README.md its folder's index), CHANGELOG.md, every file of docs/,
  course/README.md;
- each course chapter course/NN_name.py as course/NN_name.ipynb: the learner's full run
  (course/notebooks/NN_name.ipynb, written by `python course/build.py --execute`), else the tests' quick run
  (build/course/NN_name.ipynb, written by tests/course/test_chapters.py), each only when at least as new as its
  source, else the notebook built from the source with jupytext, without outputs; a note under the chapter's title
  says which the page shows;
- MathJax 2.7 from the jupyter-server-mathjax package, as assets/mathjax/: the chapters' formulas are typeset by
  it, served with the pages, so the site needs no network;
- every file of the repository a staged page links to: a source file (minibert/layers/attention.py) becomes a page
  that shows its code (the link is pointed at it), an image is copied as it is. A link to a chapter's source or to
  course/notebooks/NN_name.ipynb is pointed at the chapter's page, a link to a folder at its README.md (or, where
  it has none, at a page that lists its files, as GitHub shows a folder).
A code span with an escaped pipe in a table row (`wiki\\|ptb`, as GitHub needs it) loses its backslash, which
Python-Markdown would show. The navigation is written from the pages present, and the build is strict: a link to a
missing page or file, to a heading that does not exist, or one mkdocs cannot resolve fails it (mkdocs.yml,
validation).
"""

from __future__ import annotations

import argparse
import json
import os
import posixpath
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXECUTED = ROOT / "build" / "course"  # where tests/course/test_chapters.py writes the executed chapters
RUN_KEY = "minibert_course"  # course/build.py's notebook metadata: how the notebook ran (full or quick mode)
MATHJAX = "assets/mathjax"  # mkdocs.yml's custom_mathjax_url points here

# The guides in the order a learner meets them; a page of docs/ not named here comes after them, by name.
GUIDE_ORDER = ["ARCHITECTURE", "tokenizer", "pretraining", "pretraining-steps", "continued_pretraining",
               "finetuning", "finetuning-ner-qa", "finetuning-does-pretraining-pay", "tasks", "checkpoints",
               "distillation", "descendants", "visualisation", "scaling", "memory", "performance"]
# Measured figures and experiments: docs/results.md, then any docs/results-AREA.md, then docs/experiments.md and
# any docs/experiments-AREA.md.
RESULT_PAGE = re.compile(r"docs/(results|experiments)(-[\w-]+)?\.md")
# Source files a page may link to, shown as code pages, with the highlighting of their language ("": no suffix).
CODE_LANGUAGES = {".py": "python", ".sh": "bash", ".toml": "toml", ".yml": "yaml", ".yaml": "yaml", ".json": "json",
                  ".cfg": "ini", ".txt": "text", ".jsonl": "json", ".csv": "text", ".conll": "text", "": "text"}
ASSETS = {".png", ".svg", ".jpg", ".jpeg", ".gif", ".webp", ".html", ".css", ".js"}
CHAPTER = re.compile(r"^\d\d_\w+$")
# The theme's additions (its custom_dir): the page with a chapter's download button, the stylesheet mkdocs.yml's
# extra_css names, MathJax's local config.
THEME = ROOT / "scripts" / "docs_theme"
LINK = re.compile(r"(\]\()(<[^>]*>|[^)\s]+)((?:\s+\"[^\"]*\")?\))")  # [text](target "title")
REFERENCE = re.compile(r"^(\s*\[[^\]]+\]:\s+)(\S+)(.*)$", re.MULTILINE)  # [name]: target
IMAGE_TAG = re.compile(r"(<img\b[^>]*?\bsrc=\")([^\"]+)(\")")


class StagingError(Exception):
    pass


# ------------------------------------------------------------------------------------------------ the pages
def chapter_sources(root: Path) -> list[Path]:
    return sorted(p for p in (root / "course").glob("[0-9][0-9]_*.py"))


def executed_notebook(path: Path, source: Path, mode: str):
    """The notebook at `path` when course/build.py ran it in `mode` ("full" or "quick") after the source's last
    change, else None."""
    import nbformat
    if not path.is_file() or path.stat().st_mtime < source.stat().st_mtime:
        return None
    try:
        notebook = nbformat.read(path, as_version=4)
    except (OSError, ValueError) as e:  # a notebook a learner broke by hand is passed over, not fatal
        print(f"note: {path}: not a notebook ({e}); passed over", file=sys.stderr)
        return None
    return notebook if notebook.metadata.get(RUN_KEY, {}).get("mode") == mode else None


RUN_NOTES = {
    "full": "> **Outputs of a full run** of this chapter ({executed}, `python course/build.py --execute`).",
    "quick": "> **Outputs of a quick run** ({executed}): quick mode, what the tests run, goes through the chapter with "
             "smaller sizes and fewer steps, so its figures and timings are only a sketch. "
             "`python course/build.py --execute` runs it in full, and the site then shows that run.",
    None: "> **No outputs:** this page shows the chapter's code. `python course/build.py --execute` runs it, and the "
          "site then shows its outputs.",
}


def chapter_notebook(source: Path, executed_dir: Path, notebooks_dir: Path | None = None) -> tuple[bytes, str | None]:
    """The notebook of one chapter as bytes, and which run's outputs it carries: "full" (a learner's
    `course/build.py --execute` in `notebooks_dir`), "quick" (the tests', in `executed_dir`, else a learner's
    `--quick` one) or None (no outputs). A note under the chapter's title says which."""
    import nbformat
    mode, notebook = None, None
    for mode, folder in (("full", notebooks_dir), ("quick", executed_dir), ("quick", notebooks_dir)):
        if folder is not None and (notebook := executed_notebook(folder / (source.stem + ".ipynb"), source, mode)):
            break
    if notebook is None:
        import jupytext
        mode, notebook = None, jupytext.read(source)
        notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        notebook.metadata.pop("jupytext", None)
        for number, cell in enumerate(notebook.cells):  # the same bytes from the same source (jupytext draws ids)
            cell["id"] = f"cell-{number}"
    executed = notebook.metadata.get(RUN_KEY, {}).get("executed", "")
    note = nbformat.v4.new_markdown_cell(RUN_NOTES[mode].format(executed=executed), id="run-note")
    notebook.cells.insert(1 if notebook.cells else 0, note)
    return nbformat.writes(notebook).encode("utf-8"), mode


def mathjax_files() -> dict[str, bytes]:
    """MathJax 2.7 as the jupyter-server-mathjax package carries it: {path under assets/mathjax/: bytes}."""
    try:
        import jupyter_server_mathjax
    except ImportError:
        raise StagingError("jupyter-server-mathjax is not installed, which serves the chapters' formulas: "
                           "pip install -e '.[docs]'") from None
    static = Path(jupyter_server_mathjax.__file__).resolve().parent / "static"
    return {f"{MATHJAX}/{path.relative_to(static).as_posix()}": path.read_bytes()
            for path in sorted(static.rglob("*")) if path.is_file()}


TABLE_CODE_PIPE = re.compile(r"`[^`\n]*\\\|[^`\n]*`")


def unescape_table_pipes(text: str) -> str:
    """`a\\|b` -> `a|b` in a table row's code spans: GitHub needs the backslash there, Python-Markdown shows it
    (its tables do not split a row at a pipe inside a code span)."""
    return re.sub(r"^\|.*$", lambda row: TABLE_CODE_PIPE.sub(lambda code: code.group(0).replace("\\|", "|"),
                                                              row.group(0)), text, flags=re.MULTILINE)


def code_page(relative: str, text: str) -> bytes:
    """A page that shows a source file: its path as the title, its text in a fenced, highlighted block."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    language = CODE_LANGUAGES.get(Path(relative).suffix, "text")
    return f"# {relative}\n\n{fence}{language}\n{text.rstrip()}\n{fence}\n".encode("utf-8")


def outside_code(text: str, rewrite) -> str:
    """`rewrite` applied to the parts of a Markdown text outside fenced code blocks."""
    parts = re.split(r"(^(?:```|~~~)[^\n]*\n.*?^(?:```|~~~)[ \t]*$)", text, flags=re.MULTILINE | re.DOTALL)
    return "".join(part if i % 2 else rewrite(part) for i, part in enumerate(parts))


class Stage:
    """What the staged folder holds: {path relative to it: bytes}, and the notes to print."""

    def __init__(self, root: Path, executed_dir: Path):
        self.root, self.executed_dir = root, executed_dir
        self.notebooks_dir = root / "course" / "notebooks"  # where course/build.py writes a learner's notebooks
        self.files: dict[str, bytes] = {}
        self.notes: list[str] = []
        self.chapters: list[str] = []

    def add_pages(self):
        root = self.root
        self.files.update(mathjax_files())
        for name in ("README.md", "CHANGELOG.md"):
            if (root / name).exists():
                self.files[name] = (root / name).read_bytes()
        if not (root / "README.md").exists():
            raise StagingError(f"{root}: no README.md, the home page")
        for path in sorted((root / "docs").rglob("*")):
            if path.is_file() and not any(part.startswith(".") for part in path.relative_to(root).parts):
                self.files[path.relative_to(root).as_posix()] = path.read_bytes()
        if (root / "course" / "README.md").exists():
            self.files["course/README.md"] = (root / "course" / "README.md").read_bytes()
        runs: dict[str | None, list[str]] = {}
        for source in chapter_sources(root):
            data, mode = chapter_notebook(source, self.executed_dir, self.notebooks_dir)
            self.files[f"course/{source.stem}.ipynb"] = data
            self.chapters.append(f"course/{source.stem}.ipynb")
            runs.setdefault(mode, []).append(source.stem[:2])
        if runs.get("quick"):
            self.notes.append(f"course chapters {', '.join(runs['quick'])}: the pages show the tests' quick run "
                              f"({self._shown(self.executed_dir)}); python course/build.py --execute runs them in full")
        if runs.get(None):
            self.notes.append(f"course chapters {', '.join(runs[None])}: no executed notebook newer than the source "
                              f"in {self._shown(self.notebooks_dir)} or {self._shown(self.executed_dir)}, so their "
                              "pages show the code without outputs (python course/build.py --execute writes them)")

    def _shown(self, path: Path) -> str:
        try:
            return path.relative_to(self.root).as_posix() + "/"
        except ValueError:
            return str(path)

    def follow_links(self):
        """Stage what the Markdown pages link to, and point links at what the site has (see the module doc)."""
        done = set()
        while todo := [name for name in self.files if name.endswith(".md") and name not in done]:
            page = todo[0]  # pages staged for a link are followed in turn
            done.add(page)
            text = self.files[page].decode("utf-8")

            def fix(match, group=2):
                target = match.group(group)
                new = self._resolve(page, target.strip("<>"))
                return match.group(0) if new is None else match.group(1) + new + match.group(group + 1)

            def rewrite(part):
                part = LINK.sub(fix, part)
                part = REFERENCE.sub(fix, part)
                return IMAGE_TAG.sub(fix, part)

            new_text = outside_code(text, lambda part: rewrite(unescape_table_pipes(part)))
            if new_text != text:
                self.files[page] = new_text.encode("utf-8")

    def _resolve(self, page: str, target: str) -> str | None:
        """The link to write for `target` seen from staged `page`, staging what it needs; None: keep it as is."""
        if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith(("#", "/")) or not target:
            return None  # a URL, an anchor on this page, or an absolute path (mkdocs.yml makes that an error)
        path, _, anchor = target.partition("#")
        repo_path = posixpath.normpath(posixpath.join(posixpath.dirname(page), path))
        if repo_path.startswith("../") or repo_path == "..":
            return None  # outside the repository: mkdocs says so
        here = posixpath.dirname(page) or "."

        def to(staged: str, keep_anchor=True) -> str:
            link = posixpath.relpath(staged, here)
            return link + ("#" + anchor if anchor and keep_anchor else "")

        source = self.root / repo_path
        stem = Path(repo_path).stem
        if CHAPTER.match(stem) and f"course/{stem}.ipynb" in self.files and \
                repo_path in (f"course/{stem}.py", f"course/notebooks/{stem}.ipynb", f"course/{stem}.ipynb"):
            return to(f"course/{stem}.ipynb")
        if repo_path in self.files:
            return None
        if source.is_dir():
            readme = posixpath.join(repo_path, "README.md") if repo_path != "." else "README.md"
            if readme in self.files:
                return to(readme)
            index = posixpath.join(repo_path, "index.md")
            if index not in self.files:
                self.files[index] = self._listing(repo_path)
            return to(index)
        staged = self._stage_file(repo_path)
        if staged is None or staged == repo_path:
            return None  # a missing file, which mkdocs reports, or one staged as it is
        return to(staged, keep_anchor=False)  # a code page has no line anchors

    def _stage_file(self, repo_path: str) -> str | None:
        """Stage one file of the repository; returns its staged path (a source file: its code page), or None."""
        source = self.root / repo_path
        if not source.is_file():
            return None
        suffix = source.suffix.lower()
        if suffix in ASSETS:
            self.files[repo_path] = source.read_bytes()
            return repo_path
        if suffix in CODE_LANGUAGES or suffix == ".md":
            try:
                text = source.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                return None
            if suffix == ".md":  # a Markdown file outside the pages (e.g. tests/README.md): shown as written
                self.files.setdefault(repo_path, text.encode("utf-8"))
                return repo_path
            self.files[repo_path + ".md"] = code_page(repo_path, text)
            return repo_path + ".md"
        return None

    def _listing(self, repo_path: str) -> bytes:
        """The page of a linked folder that has no README.md: its files, each linked to its page, as GitHub lists
        a folder."""
        lines = [f"# {repo_path}/", ""]
        for path in sorted((self.root / repo_path).iterdir()):
            if path.name.startswith((".", "__")) or path.suffix in (".pyc", ".tmp"):
                continue
            name, file = path.name + ("/" if path.is_dir() else ""), posixpath.join(repo_path, path.name)
            # (a file already staged as it is, e.g. a data file of docs/, is linked as it is: a code page of it
            # would be served at the same address)
            staged = None if path.is_dir() else file if file in self.files else self._stage_file(file)
            lines.append(f"- [{name}]({posixpath.basename(staged)})" if staged else f"- {name}")
        return ("\n".join(lines) + "\n").encode("utf-8")

    def nav(self) -> list:
        files = self.files
        nav: list = [{"Home": "README.md"}]
        course = (["course/README.md"] if "course/README.md" in files else []) + self.chapters
        if course:
            nav.append({"Course": course})
        guides = sorted((name for name in files if re.fullmatch(r"docs/[^/]+\.md", name)
                         and not RESULT_PAGE.fullmatch(name)),
                        key=lambda n: (GUIDE_ORDER.index(Path(n).stem) if Path(n).stem in GUIDE_ORDER
                                       else len(GUIDE_ORDER), n))
        if guides:
            nav.append({"Guides": guides})
        results = sorted((name for name in files if RESULT_PAGE.fullmatch(name)),
                         key=lambda n: (n.startswith("docs/experiments"), n != "docs/results.md",
                                        n != "docs/experiments.md", n))
        if results:
            nav.append({"Results": results})
        if "CHANGELOG.md" in files:
            nav.append({"Changelog": "CHANGELOG.md"})
        return nav


def sync(files: dict[str, bytes], folder: Path) -> None:
    """Make `folder` hold exactly `files`, writing only what changed (so a served site is not rebuilt in a loop)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        path = folder / name
        if path.is_file() and path.read_bytes() == data:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    for path in sorted(folder.rglob("*"), reverse=True):
        relative = path.relative_to(folder).as_posix()
        if path.is_file() and relative not in files:
            path.unlink()
        elif path.is_dir() and not any(path.iterdir()):
            path.rmdir()


def stage(root: Path = ROOT, out: Path = ROOT / "build" / "docs", executed_dir: Path | None = None,
          site_dir: Path | None = None, serve: bool = False) -> tuple[Path, list[str]]:
    """Stage the pages of `root` into out/src/ and write out/mkdocs.yml; returns the config and the notes."""
    staged = Stage(root, EXECUTED if executed_dir is None else executed_dir)
    staged.add_pages()
    staged.follow_links()
    sync(staged.files, out / "src")
    config = {
        "INHERIT": str((ROOT / "mkdocs.yml").resolve()),
        "theme": {"custom_dir": str(THEME)},  # merged into mkdocs.yml's theme
        "docs_dir": "src",
        "site_dir": str((site_dir or out.parent / "site").resolve()),
        "nav": staged.nav(),
    }
    if serve:  # re-stage from the repository before each rebuild, when a watched file changed
        config["hooks"] = [str(Path(__file__).resolve())]
        config["watch"] = [str(p) for p in (root / "README.md", root / "CHANGELOG.md", root / "docs",
                                            root / "course", THEME) if p.exists()]
        config["extra"] = {"staged_from": str(root), "executed_dir": str(staged.executed_dir)}
    # JSON is YAML: no YAML writer needed.
    (out / "mkdocs.yml").write_text(json.dumps(config, indent=1) + "\n", encoding="utf-8")
    return out / "mkdocs.yml", staged.notes


def on_pre_build(config, **kwargs):
    """mkdocs hook (serve only): stage again, so that an edit of README.md, docs/ or course/ shows on reload."""
    extra = config.get("extra") or {}
    if "staged_from" in extra:
        staged = Stage(Path(extra["staged_from"]), Path(extra["executed_dir"]))
        staged.add_pages()
        staged.follow_links()
        sync(staged.files, Path(config["docs_dir"]))


# ------------------------------------------------------------------------------------------------ commands
def mkdocs(args: list[str], config: Path) -> subprocess.CompletedProcess:
    # Run in the staging folder, so mkdocs-jupyter's cache (.cache/) stays there.
    # The build's output (both streams, in order) is returned for the caller to show or check.
    capture = {"stdout": subprocess.PIPE, "stderr": subprocess.STDOUT} if args[0] == "build" else {}
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")  # the theme's notice about its successor, not about our pages
    return subprocess.run([sys.executable, "-m", "mkdocs", *args, "-f", str(config)], cwd=config.parent, env=env,
                          text=True, **capture)


def build(root: Path = ROOT, out: Path = ROOT / "build" / "docs", site_dir: Path | None = None,
          executed_dir: Path | None = None, quiet: bool = False) -> subprocess.CompletedProcess:
    config, notes = stage(root, out, executed_dir, site_dir)
    if not quiet:
        for note in notes:
            print("note:", note, file=sys.stderr)
    return mkdocs(["build", "--strict", "--clean"], config)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Build (strictly) or serve the documentation site: README.md, "
                                                 "docs/ and the course's chapters, rendered by mkdocs.")
    parser.add_argument("command", choices=["build", "serve"])
    parser.add_argument("--site-dir", type=Path, default=ROOT / "build" / "site",
                        help="build: where the site goes (default build/site)")
    parser.add_argument("--stage-dir", type=Path, default=ROOT / "build" / "docs",
                        help="where the pages are staged (default build/docs)")
    parser.add_argument("--dev-addr", default="127.0.0.1:8000", help="serve: address and port (default %(default)s)")
    args = parser.parse_args(argv)
    try:
        import material  # noqa: F401
        import mkdocs as _mkdocs  # noqa: F401
        import jupytext  # noqa: F401
        import mkdocs_jupyter  # noqa: F401
    except ImportError as e:
        print(f"scripts/docs.py: {e.name} is not installed: pip install -e '.[docs]'", file=sys.stderr)
        return 1
    if args.command == "build":
        start = time.perf_counter()
        try:
            result = build(site_dir=args.site_dir, out=args.stage_dir)
        except StagingError as e:
            print(f"scripts/docs.py: {e}", file=sys.stderr)
            return 1
        if result.returncode:
            sys.stderr.write(result.stdout)
            print("scripts/docs.py: the site did not build (the errors above name each page and link)",
                  file=sys.stderr)
            return result.returncode
        print(f"site built in {time.perf_counter() - start:.0f} s: {args.site_dir}/index.html")
        return 0
    try:
        config, notes = stage(out=args.stage_dir, serve=True)
    except StagingError as e:
        print(f"scripts/docs.py: {e}", file=sys.stderr)
        return 1
    for note in notes:
        print("note:", note, file=sys.stderr)
    return mkdocs(["serve", "--strict", "--dev-addr", args.dev_addr], config).returncode


if __name__ == "__main__":
    sys.exit(main())
