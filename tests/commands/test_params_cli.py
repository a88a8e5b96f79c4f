"""`minibert params`: the parameter table, counted from the real model's params dict."""

from __future__ import annotations

import re

from minibert.cli import main
from minibert.config import BertConfig
from minibert.models import BertForMaskedLM, BertForPreTraining, BertModel
from minibert.viz.params_table import build_parameter_table


def count(text, label):
    """The number in the "parameters" column of the first line starting with `label` (after indentation)."""
    lines = text.splitlines()
    header = next(line for line in lines if line.startswith("part"))
    end = header.index("parameters") + len("parameters")  # the column is right-aligned under its title
    for line in lines:
        if line.strip().startswith(label):
            return int(line[:end].split()[-1].replace(",", ""))
    raise AssertionError(f"no line {label!r} in:\n{text}")


def test_mini_numbers(capsys):
    assert main(["params", "--config", "mini"]) == 0
    out = capsys.readouterr().out
    assert count(out, "total (num_parameters)") == 3_003_586
    assert count(out, "without pooler and NSP head") == 2_966_144
    assert "-> 4,539,008 without pooler and NSP head" in out  # what an untied decoder would cost
    assert count(out, "an untied decoder would add") == 8192 * 192
    H, F = 192, 768
    one_layer = 4 * (H * H + H) + 2 * H + (F * H + F) + (H * F + H) + 2 * H
    assert count(out, "all 3 encoder layers") == 3 * one_layer
    assert "3 × 444,864" in out and one_layer == 444_864
    assert re.search(r"word_embeddings\s+V×H\s+1,572,864", out)
    assert re.search(r"decoder\s+V×H \(tied\) \+ V\s+8,192\s+weight tied to embeddings.word_embeddings", out)


def test_table_sums_to_num_parameters_for_every_model():
    config = BertConfig.preset("tiny", vocab_size=500, max_position_embeddings=32)
    for cls in (BertForPreTraining, BertForMaskedLM, BertModel):
        model = cls(config)
        table = build_parameter_table(model)
        parts = sum(c.count for key, comps in table.sections.items() if key != "layer" for c in comps)
        assert parts + sum(table.layer_counts) == model.num_parameters()
        assert len(table.layer_counts) == config.num_hidden_layers
        assert ("mlm" in table.sections) == (cls is not BertModel)
        assert ("pooler" in table.sections) == (cls is not BertForMaskedLM)
        assert table.tied_decoder == (cls is not BertModel)


def test_config_file_and_model_class(tmp_path, capsys):
    config = BertConfig.preset("tiny", vocab_size=1000, max_position_embeddings=16)
    config.to_json_file(tmp_path / "config.json")
    assert main(["params", "--config", str(tmp_path / "config.json"), "--model-class", "BertModel"]) == 0
    out = capsys.readouterr().out
    assert count(out, "total (num_parameters)") == BertModel(config).num_parameters()
    assert "MLM head" not in out and "pooler" in out


def test_vocab_size_override(capsys):
    assert main(["params", "--config", "mini", "--vocab-size", "1000"]) == 0
    out = capsys.readouterr().out
    assert count(out, "word_embeddings") == 1000 * 192


def test_bad_config(capsys):
    assert main(["params", "--config", "huge"]) == 2
    err = capsys.readouterr().err
    assert "--config 'huge' is neither a preset" in err and "mini" in err


def test_output_into_a_closed_pipe_ends_quietly_with_sigpipes_status():
    # `minibert params | head -1`: the reader goes away; a traceback there would be noise, not an error of ours.
    import os
    import subprocess
    import sys
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody reads: every write fails (EPIPE)
    try:
        done = subprocess.run([sys.executable, "-m", "minibert", "params", "--config", "tiny"], stdout=write_end,
                              stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write_end)
    assert done.returncode == 141 and done.stderr == ""


def test_a_training_command_on_two_processes_ends_quietly_on_a_closed_pipe(tmp_path):
    # The same for `minibert pretrain | head -1` on the default two processes: there the error reaches the ranks'
    # error reporting first, which must not print a traceback and a rank's error line for it either.
    import os
    import subprocess
    import sys

    from pretrain_helpers import synthetic_documents, write_corpus
    corpus = write_corpus(tmp_path / "c.txt", synthetic_documents(40))
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run([sys.executable, "-m", "minibert", "pretrain", "--corpus", str(corpus),
                               "--config", "tiny", "--vocab-size", "120", "--seq-len", "32", "--batch-size", "8",
                               "--steps", "3",
                               "--runs-dir", str(tmp_path / "runs"), "--procs", "2", "--quiet"],
                              stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=300,
                              env={**os.environ, "MINIBERT_CACHE": str(tmp_path / "cache")})
    finally:
        os.close(write_end)
    assert done.returncode == 141 and done.stderr == "", done.stderr
