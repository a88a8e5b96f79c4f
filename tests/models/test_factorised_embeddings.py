"""Factorised embeddings (ALBERT, ELECTRA): tables of width E = embedding_size, then a projection E -> H whose
name the model family chooses. float64 finite differences through the whole encoder, projection included."""

import numpy as np
import pytest
from gradcheck import check_grad

from minibert import BertConfig
from minibert.models.base import Model
from minibert.models.bert import BertEncoder, bert_param_shapes


def config(**kw):
    values = dict(vocab_size=31, hidden_size=12, num_hidden_layers=2, num_attention_heads=3, intermediate_size=20,
                  max_position_embeddings=12, embedding_size=8)
    values.update(kw)
    return BertConfig(**values)


class ProjectedEncoder(Model):
    """The encoder as ELECTRA's discriminator uses it: body at the top level, projection "embeddings_project"."""

    def __init__(self, cfg, project_name="embeddings_project", **kw):
        self.project_name = project_name
        super().__init__(cfg, **kw)
        self.encoder = BertEncoder(self, "", True, project_name=project_name)

    def param_shapes(self):
        return bert_param_shapes(self.config, "", pooler=True, project_name=self.project_name)


def test_shapes_use_embedding_size_and_the_family_name():
    shapes = bert_param_shapes(config(), "albert.", pooler=False, project_name="encoder.embedding_hidden_mapping_in")
    assert shapes["albert.embeddings.word_embeddings.weight"] == (31, 8)
    assert shapes["albert.embeddings.position_embeddings.weight"] == (12, 8)
    assert shapes["albert.embeddings.LayerNorm.weight"] == (8,)
    assert shapes["albert.encoder.embedding_hidden_mapping_in.weight"] == (12, 8)  # (H, E), as nn.Linear stores it
    assert shapes["albert.encoder.embedding_hidden_mapping_in.bias"] == (12,)
    # E == H: no projection, whatever name is offered (BERT's shapes unchanged)
    same = bert_param_shapes(config(embedding_size=12), "", project_name="embeddings_project")
    assert same == bert_param_shapes(config(embedding_size=None), "")


def test_missing_projection_name_is_a_clear_error():
    with pytest.raises(ValueError, match="embedding_size 8 differs from hidden_size 12"):
        bert_param_shapes(config(), "")
    with pytest.raises(ValueError, match="embedding_size must be a positive integer"):
        config(embedding_size=0)


def test_embedding_size_in_config_json_only_when_set(tmp_path):
    assert "embedding_size" not in config(embedding_size=None).to_dict()
    config().to_json_file(tmp_path)
    assert BertConfig.from_json_file(tmp_path).embedding_size == 8


def test_projection_gradient_float64():
    cfg = config(hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
    rng = np.random.default_rng(0)
    model = ProjectedEncoder(cfg, seed=1, dtype=np.float64)
    for p in model.params.values():
        p += 0.05 * rng.standard_normal(p.shape)
    ids = rng.integers(1, cfg.vocab_size, (2, 7))
    mask = np.array([[1] * 7, [1] * 5 + [0] * 2])
    ids[mask == 0] = 0
    R1, R2 = rng.standard_normal((2, 7, 12)), rng.standard_normal((2, 12))
    R1[mask == 0] = 0  # the [PAD] embedding row gets no gradient by design (HF's padding_idx): read no padding

    def loss():
        model.rng = np.random.default_rng(7)  # the same dropout masks every call
        out = model.encoder.forward(ids, attention_mask=mask)
        return float((out.last_hidden_state * R1).sum() + (out.pooler_output * R2).sum())

    loss()
    model.zero_grad()
    model.encoder.backward(R1, R2)
    for name in ("embeddings_project.weight", "embeddings_project.bias", "embeddings.word_embeddings.weight",
                 "embeddings.LayerNorm.weight", "encoder.layer.0.attention.self.query.weight"):
        err = check_grad(loss, model.params[name], model.grads[name], rng=rng, max_entries=16)
        assert err < 1e-5, f"{name}: relative error {err:.2e}"
