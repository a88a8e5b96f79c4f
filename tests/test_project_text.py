"""The project speaks of itself only: no tracked text tells how it was made.

README, docs, the course, code, comments, docstrings, tests and benchmarks say what minibert does and why it is
built as it is. A reader cannot act on who worked on it when, so this test greps every git-tracked text file for:

- an ordinal with "session" (the third session, 11th session): history of the work, not of the program;
- an issue number (issue 14, issues #3): the tracker is not part of the project;
- another helper's file, an audit;
- an absolute path of a development machine (/work/..., /root/..., /home/NAME/..., /Users/NAME/...), and a /tmp/
  path written as where something ran. A /tmp/ path given to a command's option (--runs-dir /tmp/runs) or to an
  environment variable (CACHE=/tmp/c) is an example for the reader to type, and is allowed;
- run names kept as history (default-s16b), "before the fix", "the issue's target".

A dated figure names its date, machine and command; a change's history belongs in git log and CHANGELOG.md.
A match fails the test with file:line: text. ALLOWED below is the reviewed list of exceptions.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

ORDINALS = ("first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth "
            "fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth twentieth").split()

# (what the match is, the pattern). Case-insensitive.
RULES = [
    ("an ordinal session", rf"\b(?:{'|'.join(ORDINALS)}|\d+(?:st|nd|rd|th))[\s-]+sessions?\b"),
    ("an issue number", r"\bissues?\s*#?\d+"),
    ("a helper's file", r"\bhelper'?s'|\bhelper's\b|\banother\s+helper\b"),
    ("an audit", r"\baudit"),
    ("a development machine's path", r"(?<![\w.:/~-])/(?:work|root)/|(?<![\w.:/~-])/(?:home|Users)/\w"),
    ("a run name as history", r"\bdefault-s\d+"),
    ("'before the fix'", r"\bbefore\s+the\s+fix\b"),
    ("'the issue's target'", r"\bthe\s+issue'?s\s+targets?\b"),
]
COMPILED = [(what, re.compile(pattern, re.IGNORECASE)) for what, pattern in RULES]
TMP_PATH = re.compile(r"(?<![\w.:/~-])/tmp/")
TMP_AS_ARGUMENT = re.compile(r"(?:--[\w-]+[ =]|\b[A-Za-z_]\w*=)['\"]?$")  # --runs-dir /tmp/x, CACHE=/tmp/x

# Reviewed exceptions: (path, a regex the line must match, why it is legitimate). Keep it short: each entry must
# still match a tracked line (test_every_allowed_exception_is_still_needed).
ALLOWED = [
    ("tests/test_project_text.py", r"",
     "this file spells out the patterns it looks for, in its docstring, its rules and its examples"),
]


def scan_text(text: str) -> list[tuple[int, str, str]]:
    """(line number, what was found, the line) for every forbidden match in `text`."""
    found = []
    previous = ""
    for number, line in enumerate(text.splitlines(), start=1):
        for what, pattern in COMPILED:
            if pattern.search(line):
                found.append((number, what, line.strip()))
        for match in TMP_PATH.finditer(line):
            # a command wrapped in prose may put its option at the end of the line before
            before = line[:match.start()] if match.start() else previous.rstrip() + " "
            if not TMP_AS_ARGUMENT.search(before):
                found.append((number, "a /tmp/ path as where something ran", line.strip()))
                break
        previous = line
    return found


def tracked_text_files(root: Path) -> list[Path]:
    """The git-tracked files of `root` that are text (UTF-8, no NUL byte), in git's order."""
    names = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True).stdout
    files = []
    for name in names.decode("utf-8").split("\0"):
        path = root / name
        if not name or not path.is_file():  # a file deleted in the working tree but not yet in the index
            continue
        data = path.read_bytes()
        if b"\0" in data[:8192]:
            continue
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        files.append(path)
    return files


def is_allowed(relative: str, line: str, allowed=ALLOWED) -> bool:
    return any(relative == path and re.search(pattern, line) for path, pattern, _ in allowed)


def scan_repository(root: Path, allowed=ALLOWED) -> list[str]:
    """'file:line: text (what)' for every forbidden, not allowed match in the tracked text files of `root`."""
    report = []
    for path in tracked_text_files(root):
        relative = path.relative_to(root).as_posix()
        for number, what, line in scan_text(path.read_text(encoding="utf-8")):
            if not is_allowed(relative, line, allowed):
                report.append(f"{relative}:{number}: {line[:160]}  [{what}]")
    return report


def _in_a_git_checkout():
    try:
        subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=ROOT, capture_output=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return False
    return True


@pytest.mark.skipif(not _in_a_git_checkout(), reason="not a git checkout: no tracked files to scan")
def test_tracked_text_speaks_of_the_project_only():
    report = scan_repository(ROOT)
    assert not report, (f"{len(report)} line(s) tell how the project was made, not what it does (say why, not "
                        "when or who; history goes to CHANGELOG.md):\n" + "\n".join(report))


@pytest.mark.skipif(not _in_a_git_checkout(), reason="not a git checkout: no tracked files to scan")
def test_every_allowed_exception_is_still_needed():
    lines = {}
    for path, pattern, why in ALLOWED:
        text = (ROOT / path).read_text(encoding="utf-8") if (ROOT / path).exists() else ""
        lines[path] = [line.strip() for _, _, line in scan_text(text) if re.search(pattern, line.strip())]
        assert lines[path], f"ALLOWED entry for {path} ({why}) matches nothing any more: remove it"


# Forbidden lines are built from pieces so that this file's own text does not carry them.
FORBIDDEN = {
    "ordinal-word": "Measured in the " + "eleventh" + " session, on a quiet machine.",
    "ordinal-number": "as the " + "11th" + " session found",
    "ordinal-hyphen": "the " + "ninth" + "-session runs",
    "issue-number": "See " + "Issue" + " 14, part 1.",
    "issue-hash": "fixed in " + "issue" + " #3",
    "helper-file": "another " + "helper" + "'s file says so",
    "audit": "the API " + "audit" + " found two defects",
    "work-path": "notes are in " + "/work" + "/shared/notes.md",
    "root-path": "cached under " + "/root" + "/.cache/minibert",
    "home-path": "cloned to " + "/home" + "/alice/minibert",
    "tmp-where-ran": "a git archive copy in " + "/tmp" + "/wtb_base",
    "tmp-where-ran-wrapped": "a git archive copy in\n" + "/tmp" + "/wtb_base",
    "run-name": "the " + "default" + "-s16b run",
    "before-the-fix": "slower " + "before" + " the fix",
    "issue-target": "below " + "the issue's" + " target",
}
LEGITIMATE = {
    "pytest-scope": '@pytest.fixture(scope="session")',
    "resumed-run-session": "done: 2 steps; this session: 1 step (resumed at step 1)",
    "subprocess-session": "subprocess.Popen(cmd, start_new_session=True)",
    "tmp-as-option": "minibert pretrain --steps 30 --runs-dir /tmp/memruns --no-examples",
    "tmp-as-variable": "MINIBERT_CACHE=/tmp/cache minibert pretrain",
    "tmp-as-option-wrapped": "`minibert pretrain --runs-dir\n/tmp/memruns --no-examples` with an empty cache",
    "tmp-path-fixture": "out = tmp_path / 'model'",
    "upstream-issue-url": "(https://github.com/huggingface/safetensors/issues/825)",
    "helper-module": "from pretrain_helpers import synthetic_documents",
    "helper-threads": "the num_threads - 1 helper threads, started on first use",
    "url-path": "https://example.org/work/page.html",
    "first-step": "the first step of a session pays for first-time allocations",
}


@pytest.mark.parametrize("name", sorted(FORBIDDEN))
def test_a_forbidden_line_is_found(name):
    found = scan_text("a line that is fine\n" + FORBIDDEN[name] + "\n")
    assert [number for number, _, _ in found] == [1 + FORBIDDEN[name].count("\n") + 1], found


@pytest.mark.parametrize("name", sorted(LEGITIMATE))
def test_a_legitimate_line_passes(name):
    assert scan_text(LEGITIMATE[name]) == []


def test_a_forbidden_line_added_to_a_tracked_file_fails_the_scan(tmp_path):
    """The whole path the real test takes: git ls-files, binary files skipped, file:line: text reported."""
    def git(*args):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    try:
        git("init", "-q")
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("git is not installed")
    (tmp_path / "README.md").write_text("# tool\n\nWhat it does.\n", encoding="utf-8")
    (tmp_path / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0 " + b"default-s1 " + b"\xff\xfe")
    (tmp_path / "untracked.md").write_text(FORBIDDEN["run-name"] + "\n", encoding="utf-8")
    git("add", "README.md", "logo.png")
    assert scan_repository(tmp_path) == []

    (tmp_path / "README.md").write_text("# tool\n\nWhat it does.\n" + FORBIDDEN["ordinal-word"] + "\n",
                                        encoding="utf-8")
    report = scan_repository(tmp_path)
    assert report == [f"README.md:4: {FORBIDDEN['ordinal-word']}  [an ordinal session]"]
    allowed = [("README.md", "quiet machine", "an example exception")]
    assert scan_repository(tmp_path, allowed) == []
