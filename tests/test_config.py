import json

import pytest

from minibert import BertConfig, BertForPreTraining


@pytest.mark.parametrize("name,layers,hidden,heads,ffn", [
    ("tiny", 2, 128, 2, 512), ("mini", 3, 192, 4, 768), ("small", 4, 512, 8, 2048),
    ("base", 12, 768, 12, 3072), ("large", 24, 1024, 16, 4096)])
def test_presets(name, layers, hidden, heads, ffn):
    c = BertConfig.preset(name)
    assert (c.num_hidden_layers, c.hidden_size, c.num_attention_heads, c.intermediate_size) == (layers, hidden,
                                                                                                heads, ffn)


def test_mini_parameter_count():
    # 3 layers, hidden 192, FFN 768, vocab 8192, 64 positions, decoder tied: 2,966,144 without the pooler and
    # the NSP head (37,056 + 386 more with them).
    m = BertForPreTraining(BertConfig.preset("mini"))
    assert m.num_parameters() == 2_966_144 + 192 * 192 + 192 + 2 * 192 + 2


def test_config_json_round_trip_keeps_unknown_keys(tmp_path):
    d = {"model_type": "bert", "vocab_size": 100, "hidden_size": 64, "num_hidden_layers": 2,
         "num_attention_heads": 4, "intermediate_size": 128, "architectures": ["BertModel"],
         "id2label": {"0": "neg", "1": "pos"}, "hidden_act": "gelu_new"}
    (tmp_path / "config.json").write_text(json.dumps(d))
    c = BertConfig.from_json_file(tmp_path)
    assert c.hidden_act == "gelu_new" and c.vocab_size == 100
    out = tmp_path / "out"
    out.mkdir()
    c.to_json_file(out)
    back = json.loads((out / "config.json").read_text())
    assert back["id2label"] == {"0": "neg", "1": "pos"} and back["architectures"] == ["BertModel"]
    assert BertConfig.from_json_file(out) == c


def test_config_json_errors(tmp_path):
    (tmp_path / "config.json").write_text('{"model_type": "gpt2"}')
    with pytest.raises(ValueError, match=r"config.json: model_type is 'gpt2', expected one of bert, roberta"):
        BertConfig.from_json_file(tmp_path)
    (tmp_path / "config.json").write_text('{"model_type": "bert", "hidden_act": "mish"}')
    with pytest.raises(ValueError, match=r"config.json: BertConfig.hidden_act 'mish'"):
        BertConfig.from_json_file(tmp_path)


def test_keep_freed_memory_reports_success_on_glibc(monkeypatch):
    from minibert._malloc import keep_freed_memory
    monkeypatch.setenv("MINIBERT_NO_MALLOPT", "1")
    assert keep_freed_memory() is False  # the opt-out is honoured
    monkeypatch.delenv("MINIBERT_NO_MALLOPT")
    import platform
    if platform.libc_ver()[0] == "glibc":
        assert keep_freed_memory() is True


def test_release_freed_memory_honours_the_opt_out(monkeypatch):
    from minibert._malloc import release_freed_memory
    monkeypatch.setenv("MINIBERT_NO_MALLOPT", "1")
    assert release_freed_memory() is False
    monkeypatch.delenv("MINIBERT_NO_MALLOPT")
    import platform
    if platform.libc_ver()[0] == "glibc":
        assert isinstance(release_freed_memory(), bool)


def test_descendant_presets_and_model_types(tmp_path):
    albert = BertConfig.preset("albert-mini", vocab_size=100)
    assert (albert.model_type, albert.embedding_width, albert.shared_layers) == ("albert", 64, True)
    preln = BertConfig.preset("preln-mini")
    assert preln.layer_norm_position == "pre" and preln.max_tokens == 64  # 65 rows, positions from pad + 1
    assert BertConfig.preset("roberta-mini").type_vocab_size == 1
    assert BertConfig().layer_norm_position == "post"  # BERT stays post-LN
    (tmp_path / "config.json").write_text('{"model_type": "albert", "num_hidden_groups": 2}')
    with pytest.raises(ValueError, match="num_hidden_groups is 2"):
        BertConfig.from_json_file(tmp_path)
    with pytest.raises(ValueError, match="model_type 'electrum' is not supported"):
        BertConfig(model_type="electrum")


def test_model_type_distilbert_needs_its_own_config_class():
    from minibert.distilbert_config import DistilBertConfig
    with pytest.raises(ValueError, match="model_type 'distilbert' needs a DistilBertConfig"):
        BertConfig(model_type="distilbert")
    config = BertConfig.from_dict(DistilBertConfig(vocab_size=50, hidden_size=8, num_attention_heads=2,
                                                   intermediate_size=16, num_hidden_layers=1).to_dict())
    assert isinstance(config, DistilBertConfig) and config.model_type == "distilbert"
    assert config.layer_norm_position == "post" and not config.roberta_positions and not config.shared_layers
