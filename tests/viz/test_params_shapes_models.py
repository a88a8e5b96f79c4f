"""`minibert params` and `minibert shapes` describe the model a folder holds, whatever its class: a fine-tuned
classifier, tagger or QA model, a DistilBERT, an ELECTRA, a RoBERTa or ALBERT saved under its family's names.
Building a BertForPreTraining for every architecture but BERT's three pre-training classes would count
another model's parameters for such a folder."""

from __future__ import annotations

import re
import warnings

import pytest

from minibert.cli import main
from minibert.config import BertConfig
from minibert.viz.model_select import build_model, model_class_name
from minibert.viz.params_table import build_parameter_table

ALL_CLASSES = ("BertForPreTraining", "BertForMaskedLM", "BertModel", "BertForSequenceClassification",
               "BertForTokenClassification", "BertForQuestionAnswering", "DistilBertForMaskedLM", "DistilBertModel",
               "DistilBertForSequenceClassification", "ElectraForPreTraining", "ElectraForMaskedLM",
               "DebertaV2ForMaskedLM", "DebertaV2Model", "DebertaV2ForSequenceClassification",
               "DebertaV2ForTokenClassification", "DebertaV2ForQuestionAnswering")

TINY = dict(vocab_size=60, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=24,
            max_position_embeddings=20)


def config_for(class_name):
    if class_name.startswith("DistilBert"):
        from minibert.distilbert_config import DistilBertConfig
        return DistilBertConfig(**TINY)
    if class_name.startswith("Electra"):
        return BertConfig(**TINY, model_type="electra")
    if class_name.startswith("DebertaV2"):
        from minibert.deberta_config import DebertaV2Config
        return DebertaV2Config(**TINY, relative_attention=True, pos_att_type=["p2c", "c2p"], position_buckets=4,
                               norm_rel_ebd="layer_norm")
    return BertConfig(**TINY)


def total(text):
    return int(re.search(r"total \(num_parameters\)\s+([\d,]+)", text).group(1).replace(",", ""))


def traced(text):
    m = re.search(r"parameters in the stages above: ([\d,]+) \(model.num_parameters\(\) = ([\d,]+)\)", text)
    return int(m.group(1).replace(",", "")), int(m.group(2).replace(",", ""))


@pytest.mark.parametrize("class_name", ALL_CLASSES)
def test_a_saved_folder_is_described_as_the_class_it_holds(class_name, tmp_path, capsys):
    config = config_for(class_name)
    if class_name.endswith("Classification"):  # 3 classes, as fine-tuning names them in config.json
        config.extra["id2label"] = {"0": "negative", "1": "neutral", "2": "positive"}
    model = build_model(config, class_name, seed=1)
    assert getattr(model, "num_labels", 3) == 3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.save_pretrained(tmp_path)
    assert main(["params", "--model", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"Parameters of {class_name} ")
    assert total(out) == model.num_parameters()
    assert main(["shapes", "--model", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"A batch's journey through {class_name} ")
    assert traced(out) == (model.num_parameters(), model.num_parameters())  # every stage's parameters counted once


@pytest.mark.parametrize("class_name", ALL_CLASSES)
def test_every_parameter_is_in_one_named_row(class_name):
    model = build_model(config_for(class_name), class_name)
    table = build_parameter_table(model)
    assert "other" not in table.sections or class_name.startswith("Electra")  # heads are named, not "other"
    assert len(table.layer_counts) == TINY["num_hidden_layers"]


def test_family_names_of_the_architectures_are_understood(tmp_path, capsys):
    """A RoBERTa pre-training run saves "RobertaForMaskedLM" (no NSP head, no pooler), ALBERT "AlbertForPreTraining"."""
    from minibert.models import BertForMaskedLM
    config = BertConfig(**{**TINY, "max_position_embeddings": 22}, model_type="roberta", type_vocab_size=1,
                        extra={"architectures": ["RobertaForMaskedLM"]})
    assert model_class_name(config) == "BertForMaskedLM"
    config.to_json_file(tmp_path / "config.json")
    assert main(["params", "--model", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert total(out) == BertForMaskedLM(config).num_parameters()
    assert "pooler" not in out and "NSP head" not in out
    albert = BertConfig(**TINY, model_type="albert", embedding_size=8,
                        extra={"architectures": ["AlbertForPreTraining"]})
    assert model_class_name(albert) == "BertForPreTraining"


def test_a_model_class_of_another_family_is_refused(tmp_path, capsys):
    from minibert.distilbert_config import DistilBertConfig
    from minibert.viz.model_select import MODEL_CLASSES, classes_for
    assert classes_for(DistilBertConfig(**TINY))[0] == "DistilBertForMaskedLM"
    assert set(MODEL_CLASSES) == set(ALL_CLASSES)  # --model-class offers every class
    assert main(["params", "--config", "tiny", "--model-class", "DistilBertModel"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--model-class DistilBertModel does not fit this config" in err
    assert "BertForSequenceClassification" in err  # what would fit


def test_albert_rows_name_the_embedding_width_and_one_shared_layer(capsys):
    assert main(["params", "--config", "albert-mini"]) == 0
    out = capsys.readouterr().out
    E, V = 64, 8192
    assert "; 1 encoder layer, shared by all 3 (ALBERT)" in out
    assert re.search(r"the shared layer, used 3 times\s+1 × 444,864\s+444,864", out)
    # the decoder is tied to the V×E embedding matrix: untied it would add V×E, not V×H
    assert re.search(rf"an untied decoder would add V×{E}\s+{V * E:,}", out)


def test_classifier_rows_and_shapes_use_the_letter_c(tmp_path, capsys):
    from minibert.models.token_classification import BertForTokenClassification
    config = BertConfig(**TINY)
    model = BertForTokenClassification(config, num_labels=5)
    model.save_pretrained(tmp_path)
    assert main(["params", "--model", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"classifier head \(classifier\)\n  classifier\s+C×H \+ C\s+85\n", out)  # 5 x 16 + 5
    assert main(["shapes", "--model", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "C=5 classes" in out
    assert re.search(r"\nclassifier\s+x Wᵀ \+ b, W \(C, H\)\s+\(B, T, C\)\s+\(3, 10, 5\)\s+85\n", out)
    assert re.search(r"\nlogits\s+model output\s+\(B, T, C\)", out)


def test_distilbert_shapes_use_its_own_names_and_inputs(tmp_path, capsys):
    from minibert.distilbert_config import DistilBertConfig
    from minibert.models.distilbert import DistilBertForMaskedLM
    DistilBertForMaskedLM(DistilBertConfig(**TINY)).save_pretrained(tmp_path)
    assert main(["shapes", "--model", str(tmp_path), "--all-layers"]) == 0
    out = capsys.readouterr().out
    assert "token_type_ids" not in out  # a DistilBERT reads none
    assert re.search(r"\nembeddings\s+word \+ position embeddings, LayerNorm", out)
    assert re.search(r"\ntransformer\.layer\.1\s", out) and "encoder.layer" not in out
    assert re.search(r"\n  vocab_projector\s+x Wᵀ \+ b, W \(V, H\) = word_embeddings \(tied\)", out)
    assert len(re.findall(r"\n(logits|prediction_logits)\s", out)) == 1  # one output, not the same array twice
