"""The README is a short guide: a learner finds on its first screen what BERT is, the two commands, the course and
where the attention backward lives; its commands and code map point at things that exist."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
FIRST_SCREEN = "\n".join(README.splitlines()[:40])


def test_the_readme_is_short():
    assert len(README.encode("utf-8")) < 10_000, "README.md: keep it under 10 KB; figures go to docs/results.md"


def test_the_first_screen_says_what_bert_is_and_gives_the_two_commands_first():
    assert re.search(r"\*\*BERT\*\* is ", FIRST_SCREEN)
    first_block = re.search(r"```bash\n(.*?)```", README, re.DOTALL).group(1).splitlines()
    assert [line.split("#")[0].strip() for line in first_block] == ["bash scripts/pretrain.sh", "bash scripts/test.sh"]
    assert all((ROOT / "scripts" / name).is_file() for name in ("pretrain.sh", "test.sh"))


def test_the_first_screen_shows_the_course_and_the_attention_backward():
    assert "## Learn" in FIRST_SCREEN
    assert "bash scripts/install.sh course && python course/build.py && jupyter lab course/notebooks" in FIRST_SCREEN
    assert "(course/README.md)" in FIRST_SCREEN
    assert "self_attention_backward" in FIRST_SCREEN and "(minibert/layers/attention.py)" in FIRST_SCREEN
    assert "def self_attention_backward(" in (ROOT / "minibert" / "layers" / "attention.py").read_text()


def test_every_path_in_the_code_map_exists():
    code_map = README[README.index("## How it is built"):README.index("## How we know it is right")]
    paths = set(re.findall(r"`(minibert/[\w/]+(?:\.py)?)`", code_map))
    paths |= set(re.findall(r"\]\(([\w/]+\.py)\)", code_map))
    assert len(paths) >= 8, paths
    assert [p for p in sorted(paths) if not (ROOT / p).exists()] == []


def test_each_measured_line_has_a_date_and_a_command():
    section = README[README.index("## What the default run gives"):README.index("## What you can do")]
    lines = re.findall(r"^- (.*?)(?=\n- |\n\n)", section, re.DOTALL | re.MULTILINE)  # one per machine
    assert len(lines) >= 1
    for line in lines:
        assert re.search(r"(January|February|March|April|May|June|July|August|September|October|November|December)"
                         r" \d{1,2}, \d{4}", line), line
        assert "`bash scripts/pretrain.sh`" in line or "`minibert pretrain`" in line, line
