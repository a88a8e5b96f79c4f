"""io/families.py: minibert's names <-> each family's Hugging Face names, both ways."""

import pytest

from minibert import BertConfig, BertForPreTraining, BertModel
from minibert.io.families import architecture, from_hf_name, to_hf_name


@pytest.mark.parametrize("preset", ["albert-mini", "roberta-mini", "preln-mini"])
@pytest.mark.parametrize("cls", [BertForPreTraining, BertModel])
def test_every_name_round_trips(preset, cls):
    model = cls(BertConfig.preset(preset, vocab_size=50), init_weights=False)
    model_type = model.config.model_type
    names = {to_hf_name(n, model_type, model.base_prefix) for n in model.params}
    assert len(names) == len(model.params)  # no two parameters share a file name
    for name in model.params:
        hf = to_hf_name(name, model_type, model.base_prefix)
        back = from_hf_name(hf, model_type)
        # a bare model's names come back without "bert." only when the file had no prefix
        assert back == name or back == "bert." + name, (name, hf, back)


def test_albert_names_and_class():
    assert to_hf_name("bert.encoder.layer.0.attention.output.dense.weight", "albert", "bert.") == \
        "albert.encoder.albert_layer_groups.0.albert_layers.0.attention.dense.weight"
    assert to_hf_name("cls.predictions.bias", "albert", "bert.") == "predictions.bias"
    assert from_hf_name("predictions.decoder.weight", "albert") == "cls.predictions.decoder.weight"
    assert architecture("BertForPreTraining", "albert") == "AlbertForPreTraining"
    assert architecture("BertForPreTraining", "roberta") == "RobertaForMaskedLM"  # RoBERTa has no NSP head
    assert to_hf_name("bert.embeddings.x", "electra", "bert.") == "bert.embeddings.x"  # not a family of ours
