"""The course's checks can fail.

- With a wrong gradient in minibert's softmax backward (its sign flipped), or a dropout backward that takes the
  value gradient from the probabilities before dropout, the attention chapter stops with an error that names the
  check; without them, the same harness runs the chapter to its end.
- Every exercise's test refuses a plausible wrong answer (tests/course/wrong_answers.py), with an AssertionError
  that shows what it expected against what it got.
- No cell ends with a value its notebook would echo as Out[] (a check's largest difference).

A chapter runs as a plain script in a fresh interpreter (quick mode, in course/), under a harness that can replace a
minibert function in every module that holds it with a wrong one, and that wraps
`minibert.course.exercise` so that each exercise's test also runs on the wrong answer before the real one."""

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
COURSE = ROOT / "course"
sys.path.insert(0, str(Path(__file__).resolve().parent))

from wrong_answers import WRONG  # noqa: E402

CHAPTERS = sorted(p.stem for p in COURSE.glob("[0-9][0-9]_*.py"))

HARNESS = """
import json, runpy, sys
import minibert.course as course
import minibert.layers.attention as attention
from wrong_answers import WRONG

chapter, mode, report = sys.argv[1:4]


def replace(name, make_wrong):
    original = getattr(attention, name)
    wrong = make_wrong(original)
    for module in list(sys.modules.values()):
        if getattr(module, name, None) is original:
            setattr(module, name, wrong)
    assert getattr(attention, name) is wrong


if mode == "softmax_sign":
    replace("softmax_backward", lambda original: lambda dprobs, probs: -original(dprobs, probs))
elif mode == "dropout_dv":  # dv from the probabilities before dropout: the same as after, when dropout is off
    def before_dropout(original):
        def backward(dcontext, cache, grads, prefix):
            x, w_qkv, q, k, v, probs, probs_dropped, drop_mask, scale = cache
            return original(dcontext, (x, w_qkv, q, k, v, probs, probs, drop_mask, scale), grads, prefix)
        return backward
    replace("self_attention_backward", before_dropout)

results = {}
real_exercise = course.exercise


def exercise(number, answer, name, test):
    make = WRONG.get(chapter, {}).get(answer.__name__)
    if make is None:
        results[answer.__name__] = "no wrong answer"
    else:
        try:
            test(make(sys._getframe(1).f_globals))
            results[answer.__name__] = "accepted"
        except AssertionError as error:
            results[answer.__name__] = "refused: " + str(error)
        except Exception as error:  # a crash is not a check that says what it expected
            results[answer.__name__] = f"crashed: {type(error).__name__}: {error}"
    real_exercise(number, answer, name, test)


course.exercise = exercise
try:
    runpy.run_path(chapter + ".py", run_name="__main__")
finally:
    with open(report, "w") as f:
        json.dump(results, f)
"""


def run_chapter(chapter, mode, tmp_path):
    env = dict(os.environ, MINIBERT_COURSE_QUICK="1", MPLBACKEND="Agg",
               PYTHONPATH=os.pathsep.join([str(ROOT), str(Path(__file__).resolve().parent)]))
    report = tmp_path / f"{chapter}-{mode}.json"
    done = subprocess.run([sys.executable, "-c", HARNESS, chapter, mode, str(report)], check=False, cwd=COURSE,
                          env=env, capture_output=True, text=True, timeout=600)
    results = json.loads(report.read_text()) if report.exists() else {}
    return done, results


@pytest.mark.parametrize("mode, first_check", [("softmax_sign", "dx: ours vs minibert"),
                                               ("dropout_dv", "dropout: dx, ours vs minibert")])
def test_a_wrong_gradient_fails_the_attention_chapter(mode, first_check, tmp_path):
    pytest.importorskip("matplotlib")
    done, _ = run_chapter("04_attention", mode, tmp_path)
    assert done.returncode != 0, done.stdout[-2000:]
    assert "AssertionError" in done.stderr
    # the first check that reads the wrong backward names itself in the error
    assert first_check in done.stderr, done.stderr[-2000:]
    assert "exercise 1:" not in done.stdout  # stopped at the check, not later


def test_every_chapter_has_a_wrong_answer_for_each_exercise():
    for chapter in CHAPTERS:
        text = (COURSE / f"{chapter}.py").read_text(encoding="utf-8")
        answered = [line.split(",")[1].strip() for line in text.splitlines() if line.startswith("exercise(")]
        assert answered, chapter
        assert sorted(WRONG.get(chapter, {})) == sorted(answered), chapter


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_each_exercise_refuses_a_wrong_answer(chapter, tmp_path):
    pytest.importorskip("matplotlib")
    done, results = run_chapter(chapter, "unperturbed", tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert sorted(results) == sorted(WRONG[chapter]), results
    for name, outcome in results.items():
        assert outcome.startswith("refused: "), f"{chapter}, {name}: the wrong answer was {outcome}"
        assert "expected" in outcome and "got" in outcome, f"{chapter}, {name}: {outcome}"
    last = len(results)
    assert f"exercise {last}:" in done.stdout  # the chapter ran to its last cell, the real answers passing
    if chapter == "04_attention":  # the checks the perturbed runs stop at pass here
        assert "dx: ours vs minibert" in done.stdout and "dropout: dx, ours vs minibert" in done.stdout


def echoed(source: str) -> list[str]:
    """The code cells of a chapter source whose last statement leaves a value a notebook would print as Out[]:
    a `check(...)` (it returns the largest difference) or a bare expression that is not a call."""
    lines = source.split("\n")
    starts = [i for i, line in enumerate(lines) if line.startswith("# %%")] + [len(lines)]
    found = []
    for a, b in zip(starts, starts[1:]):
        if "[markdown]" in lines[a]:
            continue
        body = ast.parse("\n".join(lines[a + 1:b])).body
        last = body[-1] if body else None
        if isinstance(last, ast.Expr) and (not isinstance(last.value, ast.Call)
                                           or ast.unparse(last.value.func) == "check"):
            found.append(f"line {a + 1 + last.lineno}: {ast.unparse(last)[:60]}")
    return found


def test_the_finder_of_echoed_values_finds_one():
    assert echoed("# %%\nx = 1\ncheck('a', x, 1)\n") == ["line 3: check('a', x, 1)"]
    assert echoed("# %%\nx\n# %% [markdown]\n# x\n# %%\nprint(x)\n") == ["line 2: x"]


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_no_cell_ends_with_a_value_the_notebook_would_echo(chapter):
    assert echoed((COURSE / f"{chapter}.py").read_text(encoding="utf-8")) == []
