"""`minibert predict`: answers widened to whole words, a --task-type that contradicts the checkpoint's head, and the
QA options' one-line errors."""

import json
import re

import pytest

from minibert.cli import main
from minibert.models.classification import BertForSequenceClassification
from minibert.models.question_answering import BertForQuestionAnswering
from minibert.models.token_classification import BertForTokenClassification
from tiny_checkpoint import make_tiny_checkpoint

# Every word of the context is split into pieces, so most token spans start or end inside a word.
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "?", ".", "where", "an", "##na", "wa", "##s", "bor", "##n",
         "i", "os", "##l", "##o"]
CONTEXT = "Anna was born in Oslo."


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("heads")
    return {name: make_tiny_checkpoint(root / name, VOCAB, cls=cls, seed=seed)
            for seed, (name, cls) in enumerate([("qa", BertForQuestionAnswering),
                                                 ("sequence", BertForSequenceClassification),
                                                 ("tokens", BertForTokenClassification)])}


def one_line_error(capsys, argv):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("minibert predict: error: "), err
    return err


def test_word_span_widens_to_whole_words():
    from minibert.finetune.qa_predict import word_span
    assert word_span(CONTEXT, 2, 8) == (0, 8)  # "na was" -> "Anna was"
    assert word_span(CONTEXT, 9, 12) == (9, 13)  # "bor" -> "born"
    assert word_span(CONTEXT, 17, 20) == (17, 21)  # "Osl" -> "Oslo", not the full stop
    assert word_span(CONTEXT, 17, 22) == (17, 22)  # already whole: unchanged
    assert word_span("北京大学", 1, 2) == (1, 2)  # CJK characters are words of their own


def test_answers_are_whole_words_of_the_context(models, capsys):
    assert main(["predict", "--model", str(models["qa"]), "--question", "where ?", "--context", CONTEXT,
                 "--top-k", "5", "--json"]) == 0
    answers = json.loads(capsys.readouterr().out)["answers"]
    assert len(answers) == 5  # widened spans that coincide count once, and the next best fills the place
    assert len({(a["start"], a["end"]) for a in answers}) == 5
    words = [(m.start(), m.end()) for m in re.finditer(r"\w+|[^\w\s]", CONTEXT)]  # a full stop is a word too
    for a in answers:
        assert a["text"] == CONTEXT[a["start"]:a["end"]]
        assert any(s == a["start"] for s, _ in words) and any(e == a["end"] for _, e in words), a


@pytest.mark.parametrize("model, forced, message", [
    ("sequence", "tokens", "--task-type tokens: {dir} is a text classifier (BertForSequenceClassification in its "
                           "config.json), not a word tagger"),
    ("tokens", "sequence", "--task-type sequence: {dir} is a word tagger (BertForTokenClassification in its "
                           "config.json), not a text classifier"),
    ("qa", "tokens", "--task-type tokens: {dir} is a question answering model"),
])
def test_a_task_type_against_the_checkpoints_head_is_refused(models, capsys, model, forced, message):
    err = one_line_error(capsys, ["predict", "--model", str(models[model]), "--task-type", forced, "a text"])
    assert message.format(dir=models[model]) in err


@pytest.mark.parametrize("extra, message", [
    (["--context-file", "{tmp}/missing.txt"], "--context-file {tmp}/missing.txt: no such file"),
    (["--context-file", "{tmp}"], "--context-file {tmp}: is a folder; expected a file"),
    (["--context-file", "{tmp}/binary.txt"], "--context-file {tmp}/binary.txt: not UTF-8 text"),
    (["--context", CONTEXT, "--doc-stride", "-1"], "--doc-stride must be >= 0, got -1"),
    (["--context", CONTEXT, "--output", "{tmp}/answers.jsonl"], "--output: a question answering model prints"),
])
def test_question_answering_options_are_one_line(models, tmp_path, capsys, extra, message):
    (tmp_path / "binary.txt").write_bytes(b"\xff\xfe\x00Oslo")
    argv = ["predict", "--model", str(models["qa"]), "--question", "where ?"] + extra
    err = one_line_error(capsys, [a.replace("{tmp}", str(tmp_path)) for a in argv])
    assert message.replace("{tmp}", str(tmp_path)) in err


@pytest.mark.parametrize("model, argv", [("sequence", ["a cat"]), ("tokens", ["a cat"]),
                                         ("qa", ["--question", "where ?", "--context", CONTEXT])])
def test_predict_resolves_the_model_folder_and_reads_its_config_once(models, capsys, monkeypatch, model, argv):
    """The command finds --model's folder and reads its config.json once for every check and default (loading
    the weights reads it again, in io/checkpoint.py: not counted)."""
    import sys

    import minibert.finetune.model_source as model_source
    import minibert.io.model_folder as model_folder
    from minibert.config import BertConfig

    resolved, reads = [], []
    real_resolve, real_read = model_folder.resolve_model_folder, BertConfig.from_json_file

    def resolve(value, option="--model"):
        if option == "--model":  # (the weights' loader resolves its folder again, as an API call: option None)
            resolved.append(value)
        return real_resolve(value, option)

    def read(cls, path):
        if not sys._getframe(1).f_code.co_filename.endswith(("io/checkpoint.py", "io\\checkpoint.py")):
            reads.append(path)
        return real_read(path)
    for module in (model_folder, model_source):
        monkeypatch.setattr(module, "resolve_model_folder", resolve)
    monkeypatch.setattr(BertConfig, "from_json_file", classmethod(read))
    assert main(["predict", "--model", str(models[model]), "--no-progress", *argv]) == 0, capsys.readouterr().err
    assert len(resolved) == 1 and len(reads) == 1, (resolved, reads)
