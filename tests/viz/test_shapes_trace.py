"""`minibert shapes`: shapes recorded from a real forward pass, so they follow the config and the code."""

from __future__ import annotations

import re

import pytest

import minibert.layers.encoder_layer as encoder_layer_module
import minibert.models.bert as bert_module
from minibert.cli import main
from minibert.config import BertConfig
from minibert.models import BertForPreTraining, BertModel
from minibert.viz.shapes import fold_layers, journey_rows, trace_forward


def rows_by_where(rows):
    out = {}
    for r in rows:
        out.setdefault(r.where, []).append(r)
    return out


def test_shapes_follow_an_unusual_config():
    # Sizes that appear nowhere in the code: F=100, V=77, 5 heads of 8.
    cfg = BertConfig(vocab_size=77, hidden_size=40, num_hidden_layers=2, num_attention_heads=5,
                     intermediate_size=100, max_position_embeddings=20)
    model = BertForPreTraining(cfg)
    journey = trace_forward(model, batch_size=3, seq_len=7)
    rows = rows_by_where(journey_rows(journey, model))
    B, T, H, A, D, F, V = 3, 7, 40, 5, 8, 100, 77
    assert rows["input_ids"][0].shape == (B, T)
    assert rows["embeddings"][0].shape == (B, T, H)
    attention = rows["attention.self"]  # q/k/v, then the context
    assert attention[0].shape == (B, A, T, D) and attention[-1].shape == (B, T, H)
    assert [r.shape for r in rows["softmax"]] == [(B, A, T, T)] * 2  # one per layer
    assert [r.shape for r in rows["intermediate.dense"]] == [(B, T, F)] * 2
    assert rows["intermediate.dense"][0].weight_shape == (F, H)
    assert rows["output.dense"][0].shape == (B, T, H)
    assert rows["pooler"][0].shape == (B, H)
    assert rows["decoder"][0].shape == (B * T, V)
    assert rows["prediction_logits"][0].shape == (B, T, V)
    assert rows["seq_relationship_logits"][0].shape == (B, 2)
    # Stage parameter counts add up to the model's.
    assert sum(r.params for r in journey_rows(journey, model) if r.depth == 1) == model.num_parameters()


def test_tracing_leaves_the_model_untouched():
    original = (bert_module.encoder_layer_forward, encoder_layer_module.linear_forward,
                encoder_layer_module.get_activation)
    model = BertModel(BertConfig.preset("tiny", vocab_size=100, max_position_embeddings=16))
    model.train()
    trace_forward(model, batch_size=2, seq_len=5)
    assert (bert_module.encoder_layer_forward, encoder_layer_module.linear_forward,
            encoder_layer_module.get_activation) == original
    assert model.training  # the mode is restored after the eval-mode trace


def test_identical_layers_are_folded():
    model = BertModel(BertConfig.preset("mini", vocab_size=100))
    rows = journey_rows(trace_forward(model, 3, 10), model)
    folded = fold_layers(rows)
    stages = [r.where for r in folded if r.depth == 1]
    assert stages == ["embeddings", "encoder.layer.0", "encoder.layer.1-2", "pooler"]
    assert [r.params for r in folded if r.where == "encoder.layer.1-2"] == [2 * 444_864]


def test_shapes_command_mini(capsys):
    assert main(["shapes", "--config", "mini"]) == 0
    out = capsys.readouterr().out
    assert "B=3 batch size, T=10 tokens per sequence, H=192 hidden size, A=4 attention heads" in out
    assert re.search(r"q, k, v each.*\(B, A, T, D\)\s+\(3, 4, 10, 48\)", out)
    assert re.search(r"softmax.*\(B, A, T, T\)\s+\(3, 4, 10, 10\)", out)
    assert re.search(r"intermediate\.dense.*W \(F, H\)\s+\(B, T, F\)\s+\(3, 10, 768\)\s+148,224", out)
    assert re.search(r"prediction_logits.*\(B, T, V\)\s+\(3, 10, 8192\)", out)
    assert "model.num_parameters() = 3,003,586" in out


def test_shapes_command_sizes_and_errors(capsys):
    assert main(["shapes", "--config", "tiny", "--batch-size", "5", "--seq-len", "7", "--all-layers"]) == 0
    out = capsys.readouterr().out
    assert "(5, 7, 128)" in out and "encoder.layer.1 " in out  # both layers printed in full
    assert main(["shapes", "--config", "tiny", "--seq-len", "65"]) == 2
    assert "--seq-len must be in 1..64" in capsys.readouterr().err
    assert main(["shapes", "--config", "tiny", "--batch-size", "0"]) == 2
    assert "--batch-size must be at least 1" in capsys.readouterr().err


def test_shapes_of_a_saved_model_folder(tmp_path, capsys):
    """--model DIR reads config.json and its "architectures": a BertModel folder has no MLM head."""
    model = BertModel(BertConfig.preset("tiny", vocab_size=300, max_position_embeddings=32))
    model.save_pretrained(tmp_path)
    assert main(["shapes", "--model", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "A batch's journey through BertModel" in out
    assert "cls.predictions" not in out and "last_hidden_state" in out


@pytest.mark.parametrize("preset", ["tiny", "mini"])
def test_letters_never_lie(preset, capsys):
    """Where a letter is printed, it names that very size (sizes shared by two letters are printed as numbers)."""
    assert main(["shapes", "--config", preset]) == 0
    out = capsys.readouterr().out
    cfg = BertConfig.preset(preset)
    sizes = {"B": 3, "T": 10, "H": cfg.hidden_size, "A": cfg.num_attention_heads, "D": cfg.head_size,
             "F": cfg.intermediate_size, "V": cfg.vocab_size, "B·T": 30}
    checked = 0
    for sym, num in re.findall(r"(\([A-Z·, 0-9]+\))\s+(\([\d, ]+\))", out):
        letters = [s.strip() for s in sym.strip("()").split(",") if s.strip()]
        numbers = [int(n) for n in num.strip("()").split(",") if n.strip()]
        assert len(letters) == len(numbers)
        for s, n in zip(letters, numbers):
            assert (int(s) if s.isdigit() else sizes[s]) == n, (sym, num)
            checked += 1
    assert checked > 50


@pytest.mark.parametrize("model_type", ["albert", "roberta-prelayernorm", "roberta"])
def test_shapes_of_the_descendants(model_type):
    family = {"albert": dict(embedding_size=8), "roberta": dict(type_vocab_size=1)}.get(model_type, {})
    cfg = BertConfig(vocab_size=77, hidden_size=40, num_hidden_layers=3, num_attention_heads=5,
                     intermediate_size=100, max_position_embeddings=20, model_type=model_type, **family)
    model = BertForPreTraining(cfg)
    rows = journey_rows(trace_forward(model, batch_size=3, seq_len=7), model)
    by_where = rows_by_where(rows)
    layers = [r for r in rows if r.depth == 1 and r.where.startswith("encoder.layer.")]
    assert [r.where for r in layers] == ["encoder.layer.0", "encoder.layer.1", "encoder.layer.2"]
    if model_type == "albert":
        assert by_where["embeddings"][0].shape == (3, 7, 8)  # E wide, then the projection to H
        assert by_where["encoder.embedding_hidden_mapping_in"][0].params == 40 * 8 + 40
        assert [r.params for r in layers][1:] == [0, 0]  # layer 0's weights, used again
    if model_type == "roberta-prelayernorm":
        assert by_where["LayerNorm"][0].params == 80  # the final LayerNorm, after the last layer
        assert len(by_where["attention.LayerNorm"]) == 3 and "attention.output.LayerNorm" not in by_where
    assert sum(r.params or 0 for r in rows if r.depth == 1) == model.num_parameters()
