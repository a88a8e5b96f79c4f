"""Texts longer than the model (finetune/windows.py): the windows cover every word piece, a text's prediction is
the mean of its windows' logits, and a classifier fine-tuned with windows reads a keyword that truncation cuts
off, in `minibert finetune` and in `minibert predict`."""

import json

import numpy as np
import pytest

from minibert.cli import main
from minibert.finetune.data import Examples
from minibert.finetune.train import encode_examples
from minibert.finetune.windows import encode_windows, pool_windows, window_starts
from minibert.tokenizer import WordPieceTokenizer
from tests.finetune.finetune_helpers import FILLERS, KEYWORDS, make_model_dir, write_rows


@pytest.mark.parametrize("n", [1, 5, 30, 31, 57, 100])
@pytest.mark.parametrize("length,overlap", [(30, 0), (30, 7), (10, 9)])
def test_windows_cover_every_piece_with_the_overlap_asked(n, length, overlap):
    starts = window_starts(n, length, overlap)
    covered = np.zeros(n, dtype=int)
    for s in starts:
        covered[s:s + length] += 1
    assert covered.min() >= 1 and starts[0] == 0
    assert min(n, starts[-1] + length) == n  # the last window ends at the text's end
    for a, b in zip(starts, starts[1:]):
        assert b > a and a + length - b >= overlap  # neighbours share at least `overlap` pieces


def test_a_long_text_becomes_windows_and_a_short_one_stays_as_truncation_reads_it(tmp_path):
    tokenizer = WordPieceTokenizer.from_pretrained(make_model_dir(tmp_path / "m"))
    long_text = " ".join(FILLERS[i % len(FILLERS)] for i in range(45)) + " good"
    examples = Examples(["a cat sits", long_text])
    encoded, owner = encode_windows(tokenizer, examples, max_length=16, overlap=4)
    assert owner.tolist()[0] == 0 and (owner[1:] == 1).all() and len(encoded) > 3
    assert [e[0].tolist() for e in encoded[:1]] == [encode_examples(tokenizer, examples, 16)[0][0].tolist()]
    pieces = tokenizer.encode(long_text, add_special_tokens=False, truncation=False).input_ids
    starts = window_starts(len(pieces), 14, 4)
    for (ids, types), start in zip(encoded[1:], starts):
        assert ids[0] == tokenizer.cls_token_id and ids[-1] == tokenizer.sep_token_id and len(ids) <= 16
        assert ids[1:-1].tolist() == pieces[start:start + 14] and not types.any()
    assert encoded[-1][0][-2] == tokenizer.convert_tokens_to_ids("good")  # the last piece is in the last window


def test_a_texts_logits_are_the_mean_of_its_windows():
    logits = np.array([[1.0, 0.0], [0.0, 3.0], [2.0, 1.0], [5.0, -1.0]])  # (W, C)
    owner = np.array([0, 1, 1, 2])
    np.testing.assert_allclose(pool_windows(logits, owner, 3), [[1.0, 0.0], [1.0, 2.0], [5.0, -1.0]])


def test_bad_overlap_is_one_line_naming_the_option(tmp_path):
    tokenizer = WordPieceTokenizer.from_pretrained(make_model_dir(tmp_path / "m"))
    with pytest.raises(ValueError, match="--window-overlap 14 must be at least 0 and below the 14"):
        encode_windows(tokenizer, Examples(["a cat"]), max_length=16, overlap=14)


def _keyword_at_the_end(n, seed):
    """Texts of 16 filler words with the class's keyword last: past a 16-token model's first window."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        word, label = list(KEYWORDS.items())[i % 3]
        rows.append({"text": " ".join(rng.choice(FILLERS, size=16)) + f" {word}", "label": label})
    return rows


@pytest.mark.parametrize("long_texts,learns,epochs", [("windows", True, 20), ("head-tail", True, 40),
                                                      ("truncate", False, 20)])
def test_windows_read_what_truncation_cuts_off(tmp_path, capsys, long_texts, learns, epochs):
    # (head-tail reads one example a text, where windows read two or three: it takes more epochs)
    model = make_model_dir(tmp_path / "model", max_position_embeddings=16)
    train = write_rows(tmp_path / "train.csv", _keyword_at_the_end(150, 0))
    test = write_rows(tmp_path / "test.csv", _keyword_at_the_end(30, 1))
    out = tmp_path / "out"
    code = main(["finetune", "--model", str(model), "--train", train, "--test", test, "--out", str(out),
                 "--long-texts", long_texts, "--epochs", str(epochs), "--lr", "2e-3", "--dropout", "0",
                 "--batch-size", "8", "--procs", "1",
                 "--no-progress", "--json"])
    assert code == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    accuracy = summary["test"]["accuracy"]
    assert (accuracy >= 0.85) if learns else (accuracy <= 0.5)
    recorded = json.loads((out / "config.json").read_text())["finetuning"]
    assert recorded["long_texts"] == long_texts
    # predict reads the texts as the fine-tuning did, from config.json
    assert main(["predict", "--model", str(out), "--input", test, "--label-column", "label", "--json",
                 "--no-progress"]) == 0
    predicted = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    right = np.mean([p["label"] == p["true_label"] for p in predicted])
    assert right == pytest.approx(accuracy)


def test_windows_are_refused_for_text_pairs_and_for_a_tagger(tmp_path, capsys):
    model = make_model_dir(tmp_path / "model")
    rows = [{"text": "a cat", "other": "good", "label": "positive"}, {"text": "a dog", "other": "bad",
                                                                         "label": "negative"}] * 5
    train = write_rows(tmp_path / "pairs.csv", rows)
    assert main(["finetune", "--model", str(model), "--train", train, "--text-pair-column", "other",
                 "--long-texts", "windows", "--out", str(tmp_path / "o"), "--procs", "1"]) == 2
    assert "--long-texts windows cuts single texts" in capsys.readouterr().err
    assert main(["finetune", "--task-type", "tokens", "--model", str(model), "--train", train,
                 "--window-overlap", "3", "--out", str(tmp_path / "o2"), "--procs", "1"]) == 2
    assert "--window-overlap applies to text classification only" in capsys.readouterr().err
