"""Sequence classifiers of BERT's descendants against transformers' RobertaForSequenceClassification,
RobertaPreLayerNormForSequenceClassification and AlbertForSequenceClassification: logits, loss, every gradient,
and the saved checkpoint loads there with no weight left out."""

import numpy as np
import pytest
from hf_reference import assert_grads_match, copy_weights, hf_config, max_rel_diff, torch_grads

from minibert import BertConfig
from minibert.models.classification import BertForSequenceClassification

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

HF_CLASS = {"roberta": "RobertaForSequenceClassification",
            "roberta-prelayernorm": "RobertaPreLayerNormForSequenceClassification",
            "albert": "AlbertForSequenceClassification"}


@pytest.mark.parametrize("model_type", list(HF_CLASS))
def test_classifier_parity_and_export(model_type, tmp_path):
    family = dict(embedding_size=8) if model_type == "albert" else dict(max_position_embeddings=17)
    values = dict(vocab_size=97, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                  max_position_embeddings=16, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                  model_type=model_type)
    cfg = BertConfig(**{**values, **family})
    ours = BertForSequenceClassification(cfg, num_labels=3, seed=4)
    hf = getattr(transformers, HF_CLASS[model_type])(
        hf_config(ours.config, num_labels=3, classifier_dropout_prob=0.0)).train()
    copy_weights(ours, hf)
    rng = np.random.default_rng(0)
    ids = rng.integers(5, 97, (4, 14))
    mask = np.ones_like(ids)
    mask[1, 9:] = mask[2, 5:] = 0
    ids[mask == 0] = 0
    labels = np.array([0, 2, 1, 2])
    out = ours.forward(ids, attention_mask=mask, labels=labels)
    ours.backward()
    ref = hf(input_ids=torch.from_numpy(ids), attention_mask=torch.from_numpy(mask), labels=torch.from_numpy(labels))
    ref.loss.backward()
    assert max_rel_diff(out.logits, ref.logits.detach().numpy()) < 1e-4
    assert out.loss == pytest.approx(ref.loss.item(), rel=1e-5)
    assert_grads_match(ours, torch_grads(hf, ours), 1e-4)

    ours.save_pretrained(tmp_path)
    loaded, info = getattr(transformers, HF_CLASS[model_type]).from_pretrained(tmp_path, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"], info
    back = BertForSequenceClassification.from_pretrained(tmp_path)
    for name in ours.params:
        np.testing.assert_array_equal(back.params[name], ours.params[name], err_msg=name)
