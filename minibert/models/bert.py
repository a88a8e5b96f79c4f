"""BertModel: embeddings, a stack of encoder layers and the pooler. Forward keeps every layer's cache; backward
calls the layers' backwards in exact reverse order."""

from __future__ import annotations

import numpy as np

from minibert.layers.embedding import embedding_backward, embedding_forward
from minibert.layers.encoder_layer import encoder_layer_backward, encoder_layer_forward
from minibert.layers.heads import pooler_backward, pooler_forward
from minibert.models.base import Model
from minibert.models.checks import check_inputs
from minibert.models.outputs import ModelOutput


def bert_param_shapes(config, prefix="", pooler=True):
    """Name -> shape of every BertModel parameter, in Hugging Face's state-dict order."""
    H, F = config.hidden_size, config.intermediate_size
    shapes = {
        prefix + "embeddings.word_embeddings.weight": (config.vocab_size, H),
        prefix + "embeddings.position_embeddings.weight": (config.max_position_embeddings, H),
        prefix + "embeddings.token_type_embeddings.weight": (config.type_vocab_size, H),
        prefix + "embeddings.LayerNorm.weight": (H,),
        prefix + "embeddings.LayerNorm.bias": (H,),
    }
    for i in range(config.num_hidden_layers):
        p = f"{prefix}encoder.layer.{i}."
        for name in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"):
            shapes[p + name + ".weight"] = (H, H)
            shapes[p + name + ".bias"] = (H,)
        shapes[p + "attention.output.LayerNorm.weight"] = (H,)
        shapes[p + "attention.output.LayerNorm.bias"] = (H,)
        shapes[p + "intermediate.dense.weight"] = (F, H)
        shapes[p + "intermediate.dense.bias"] = (F,)
        shapes[p + "output.dense.weight"] = (H, F)
        shapes[p + "output.dense.bias"] = (H,)
        shapes[p + "output.LayerNorm.weight"] = (H,)
        shapes[p + "output.LayerNorm.bias"] = (H,)
    if pooler:
        shapes[prefix + "pooler.dense.weight"] = (H, H)
        shapes[prefix + "pooler.dense.bias"] = (H,)
    return shapes


class BertEncoder:
    """The shared body: runs on the params/grads dicts of whichever model owns it, under a name prefix."""

    def __init__(self, model, prefix, pooler):
        self.model, self.prefix, self.has_pooler = model, prefix, pooler
        self._cache = None

    def forward(self, input_ids, token_type_ids=None, attention_mask=None, output_attentions=False,
                output_hidden_states=False):
        m, cfg, prefix = self.model, self.model.config, self.prefix
        params, rng, training = m.bert_view(m.params), m.rng, m.training
        # Drop the previous batch's activations now, not when this forward ends: otherwise both batches' caches
        # are alive at once (after an evaluation, ~150 MB each for mini at 32 x 64 tokens).
        self._cache = None
        has_token_types = getattr(cfg, "has_token_types", True)  # DistilBERT: none; given ids are ignored
        input_ids, token_type_ids, attention_mask = check_inputs(cfg, input_ids, token_type_ids if has_token_types
                                                                 else None, attention_mask)
        token_type_ids = token_type_ids if has_token_types else None
        additive_mask = None
        if attention_mask is not None and not attention_mask.all():
            # 0 where a token may be attended to, the most negative float at padding: after softmax, padded
            # keys get probability 0 (Hugging Face uses the same value).
            additive_mask = ((1 - attention_mask[:, None, None, :]) * np.finfo(m.dtype).min).astype(m.dtype)  # (B, 1, 1, T)

        x, c_emb = embedding_forward(params, prefix, input_ids, token_type_ids, cfg.layer_norm_eps,
                                     cfg.hidden_dropout_prob, rng, training)  # (B, T, H)
        hidden_states, attentions, c_layers = [x], [], []
        for i in range(cfg.num_hidden_layers):
            x, probs, c = encoder_layer_forward(x, params, f"{prefix}encoder.layer.{i}.", additive_mask, cfg, rng,
                                                training)  # (B, T, H), probs (B, A, T, T)
            c_layers.append(c)
            hidden_states.append(x)
            if output_attentions:
                attentions.append(probs)
        pooled, c_pool = pooler_forward(x, params, prefix) if self.has_pooler else (None, None)  # (B, H)
        self._cache = (c_emb, c_layers, c_pool, x.shape)
        return ModelOutput(last_hidden_state=x, pooler_output=pooled,
                           attentions=attentions if output_attentions else None,
                           hidden_states=hidden_states if output_hidden_states else None)

    def backward(self, d_last_hidden_state=None, d_pooler_output=None):
        if self._cache is None:
            raise ValueError("backward() called before forward()")
        m, cfg, prefix = self.model, self.model.config, self.prefix
        params, grads = m.bert_view(m.params), m.bert_view(m.grads)
        c_emb, c_layers, c_pool, shape = self._cache  # shape = (B, T, H)
        if d_last_hidden_state is None:
            dx = np.zeros(shape, dtype=m.dtype)
        else:
            dx = np.array(d_last_hidden_state, dtype=m.dtype)  # a copy: the pooler's gradient is added into it
            if dx.shape != shape:
                raise ValueError(f"d_last_hidden_state has shape {dx.shape}, expected {shape}")
        if d_pooler_output is not None:
            if c_pool is None:
                raise ValueError("d_pooler_output given, but this model has no pooler (add_pooling_layer=False)")
            d_pooled = np.asarray(d_pooler_output, dtype=m.dtype)  # (B, H)
            if d_pooled.shape != (shape[0], shape[2]):
                raise ValueError(f"d_pooler_output has shape {d_pooled.shape}, expected {(shape[0], shape[2])}")
            dx[:, 0] += pooler_backward(d_pooled, c_pool, params, grads, prefix)  # only [CLS] feeds the pooler
        self._cache = None  # the layers' activations are freed one by one, as soon as their backward is done
        for i in reversed(range(cfg.num_hidden_layers)):
            dx = encoder_layer_backward(dx, c_layers.pop(), params, grads, f"{prefix}encoder.layer.{i}.", cfg)
        embedding_backward(dx, c_emb, params, grads, prefix, cfg.pad_token_id)


class BertModel(Model):
    """The bare encoder: `.last_hidden_state` (B, T, H) and `.pooler_output` (B, H)."""

    def __init__(self, config, seed=0, dtype=np.float32, add_pooling_layer=True, init_weights=True):
        self.add_pooling_layer = add_pooling_layer
        super().__init__(config, seed=seed, dtype=dtype, init_weights=init_weights)
        self.encoder = BertEncoder(self, "", add_pooling_layer)

    def param_shapes(self):
        return bert_param_shapes(self.config, "", pooler=self.add_pooling_layer)

    def forward(self, input_ids, token_type_ids=None, attention_mask=None, output_attentions=False,
                output_hidden_states=False):
        return self.encoder.forward(input_ids, token_type_ids, attention_mask, output_attentions,
                                    output_hidden_states)

    __call__ = forward

    def backward(self, d_last_hidden_state=None, d_pooler_output=None):
        """Accumulate into `grads` the gradient of a loss whose derivatives w.r.t. the outputs are given."""
        self.encoder.backward(d_last_hidden_state, d_pooler_output)
