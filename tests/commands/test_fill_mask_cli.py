"""fill-mask: the same guesses and probabilities as Hugging Face, as a command and in Python."""

import json

import numpy as np
import pytest

from minibert.cli import main
from minibert.config import BertConfig
from minibert.fill_mask import FillMask, fill_mask
from minibert.models import BertForPreTraining, BertModel
from minibert.tokenizer import train_wordpiece
from pretrain_helpers import synthetic_documents


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fill") / "model"
    texts = [s for doc in synthetic_documents(100) for s in doc]
    tok = train_wordpiece(texts, vocab_size=200, progress=False)
    config = BertConfig.preset("tiny", vocab_size=len(tok.vocab))
    model = BertForPreTraining(config, seed=3)
    # Random weights with some spread, so the guesses are not all equally likely.
    rng = np.random.default_rng(0)
    for name, p in model.params.items():
        if name.endswith("weight") and "LayerNorm" not in name:
            p += rng.normal(0, 0.05, p.shape).astype(p.dtype)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def test_guesses_match_transformers(model_dir):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    filler = FillMask.from_pretrained(model_dir)
    text = "the red [MASK] eats apples and the [MASK] ."
    ours = filler(text, top_k=4)
    hf = transformers.BertForMaskedLM.from_pretrained(model_dir).eval()
    ids = filler.tokenizer.encode(text).input_ids
    with torch.no_grad():
        logits = hf(input_ids=torch.tensor([ids])).logits[0].double()
    probs = torch.softmax(logits, dim=-1).numpy()
    positions = [i for i, t in enumerate(ids) if t == filler.tokenizer.mask_token_id]
    assert len(ours) == 2
    for guesses, pos in zip(ours, positions):
        p = probs[pos].copy()
        p[filler.tokenizer.all_special_ids] = -1
        best = np.argsort(-p, kind="stable")[:4]
        assert [g["token"] for g in guesses] == best.tolist()
        np.testing.assert_allclose([g["score"] for g in guesses], p[best], rtol=1e-4, atol=1e-7)


def test_result_structure_and_sequences(model_dir):
    filler = FillMask.from_pretrained(model_dir)
    (guesses,) = fill_mask(filler.model, filler.tokenizer, "the [MASK] lives in the forest .", top_k=3)
    assert len(guesses) == 3
    scores = [g["score"] for g in guesses]
    assert scores == sorted(scores, reverse=True) and 0 < sum(scores) <= 1
    for g in guesses:
        assert set(g) == {"token_str", "score", "token", "sequence"}
        assert g["sequence"] == f"the {g['token_str']} lives in the forest." or g["token_str"].startswith("##")
    two = filler("[MASK] fox eats [MASK] .", top_k=2)
    assert "[MASK]" in two[0][0]["sequence"] and "[MASK]" in two[1][0]["sequence"]  # the other mask stays


def test_command_json_and_text_output(model_dir, capsys):
    assert main(["fill-mask", "--model", str(model_dir), "the [MASK] eats fish .", "--top-k", "2", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data) == 1 and len(data[0]) == 2 and {"token_str", "score", "sequence"} <= set(data[0][0])
    assert main(["fill-mask", "--model", str(model_dir), "the [MASK] eats fish ."]) == 0
    assert capsys.readouterr().out.count("%") == 5


def test_clear_errors(model_dir, tmp_path, capsys):
    assert main(["fill-mask", "--model", str(model_dir), "no mask here"]) == 2
    err = capsys.readouterr().err
    assert "no [MASK] in the text" in err and len(err.strip().splitlines()) == 1
    assert main(["fill-mask", "--model", str(tmp_path / "missing"), "a [MASK]"]) == 2
    assert "no such run or model folder" in capsys.readouterr().err
    encoder_only = tmp_path / "encoder"
    BertModel(BertConfig.preset("tiny", vocab_size=200)).save_pretrained(encoder_only)
    (encoder_only / "vocab.txt").write_text((model_dir / "vocab.txt").read_text())
    assert main(["fill-mask", "--model", str(encoder_only), "a [MASK]"]) == 2
    assert "no masked-LM head" in capsys.readouterr().err


def test_every_text_is_checked_before_any_guess_and_named(model_dir, capsys):
    assert main(["fill-mask", "--model", str(model_dir), "the [MASK] eats fish .", "no mask here, but a long text "
                 "that goes on and on"]) == 2
    captured = capsys.readouterr()
    assert not captured.out  # (not the first text's guesses, then an error)
    assert captured.err.count("\n") == 1
    assert 'error: text 2 ("no mask here, but a long text that goes …"): no [MASK] in the text' in captured.err
    assert main(["fill-mask", "--model", str(model_dir), "the [mask] eats fish ."]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and 'text 1 ("the [mask] eats fish ."): no [MASK] in the text' in err
    assert "'[mask]' is not it: the mask token is [MASK]" in err
    assert main(["fill-mask", "--model", str(model_dir), "the [MASK] " + "fish " * 200]) == 2
    err = capsys.readouterr().err
    assert 'text 1 ("the [MASK] fish fish' in err and "more than the model's" in err
    assert main(["fill-mask", "--model", str(model_dir), "caf\udce9 [MASK]"]) == 2
    assert "text 1: not UTF-8 text: byte 0xe9 at byte offset 3" in capsys.readouterr().err


def test_command_resolves_the_folder_once_and_encodes_each_text_once(model_dir, capsys, monkeypatch):
    from minibert.io import model_folder
    from minibert.tokenizer import WordPieceTokenizer
    folders, texts = [], []
    resolve, encode = model_folder.resolve_model_folder, WordPieceTokenizer.encode
    monkeypatch.setattr(model_folder, "resolve_model_folder", lambda value, *a, **k: folders.append(value) or
                        resolve(value, *a, **k))
    monkeypatch.setattr(WordPieceTokenizer, "encode", lambda self, text, *a, **k: texts.append(text) or
                        encode(self, text, *a, **k))
    given = ["the [MASK] eats fish .", "[MASK] fox eats [MASK] ."]
    assert main(["fill-mask", "--model", str(model_dir), *given, "--top-k", "2", "--json"]) == 0
    # --model resolved once (by FillMask.from_pretrained, naming --model in its errors), then only the generic
    # loader's own look at the folder it is handed (io/checkpoint.load_pretrained takes run folders too)
    assert folders == [str(model_dir), model_dir] and texts == given
    monkeypatch.undo()
    filler = FillMask.from_pretrained(model_dir)
    assert json.loads(capsys.readouterr().out) == [filler(t, top_k=2) for t in given]
