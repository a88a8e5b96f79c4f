"""BertModel: embeddings, a stack of encoder layers and the pooler. Forward keeps every layer's cache; backward
calls the layers' backwards in exact reverse order.

Activation recompute (`model.recompute = True`, `minibert pretrain --recompute`): the forward keeps only each
layer's input and where the dropout stream stood when the layer began, and drops the layer's cache; the backward
runs the layer's forward again from those (same input, same dropout masks), then its backward. Memory for
activations falls from every layer's cache to one layer's cache plus the L inputs (B, T, H); a step costs one
more forward of the layers. The gradients are the same bits (tests/models/test_recompute.py).

Rows of the last layer (`forward(..., rows=...)`): when a loss reads the last hidden state at a few positions only
(masked-LM training reads the masked positions and, for the pooler, [CLS]), the last layer runs its output
projection and feed-forward block on those rows only (layers/encoder_layer.py) and `last_hidden_state` is (R, H),
row r being position rows[r] of the flattened (B*T, H)."""

from __future__ import annotations

import numpy as np

from minibert.layers.disentangled_attention import relative_attention_backward, relative_attention_forward
from minibert.layers.embedding import embedding_backward, embedding_forward, roberta_position_ids
from minibert.layers.encoder_layer import encoder_layer_backward, encoder_layer_forward
from minibert.layers.heads import pooler_backward, pooler_forward
from minibert.layers.layernorm import layernorm_backward, layernorm_forward
from minibert.layers.linear import linear_backward, linear_forward
from minibert.models.base import Model, needs_forward
from minibert.models.checks import check_inputs
from minibert.models.outputs import ModelOutput
from minibert.param_shapes import _projection_name, bert_param_shapes, needs_projection  # noqa: F401 (re-exported)


class BertEncoder:
    """The shared body: runs on the params/grads dicts of whichever model owns it, under a name prefix."""

    def __init__(self, model, prefix, pooler, project_name=None):
        self.model, self.prefix, self.has_pooler = model, prefix, pooler
        project_name = _projection_name(model.config, project_name)
        self.projection = f"{prefix}{project_name}." if project_name else None  # "....weight" (H, E), ".bias" (H,)
        self._cache = None

    def layer_prefix(self, i):
        """Layer i's parameter names; ALBERT's layers all use layer 0's (so its gradient sums over the uses)."""
        return f"{self.prefix}encoder.layer.{0 if self.model.config.shared_layers else i}."

    def forward(self, input_ids, *, token_type_ids=None, attention_mask=None, output_attentions=False,
                output_hidden_states=False, rows=None):
        """rows: None, or flat indices into B*T of the positions whose last hidden state is needed (see the top),
        or "cls" for each sequence's first position; with a pooler, the [CLS] rows are added. The output's `rows`
        says which rows `last_hidden_state` holds."""
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
            # (B, 1, 1, T)
            additive_mask = ((1 - attention_mask[:, None, None, :]) * np.finfo(m.dtype).min).astype(m.dtype)

        if rows is not None:
            if output_hidden_states:
                raise ValueError("rows: the last layer's output at some rows only, but output_hidden_states asks for "
                                 "all of it")
            B, T = input_ids.shape
            if isinstance(rows, str):
                if rows != "cls":
                    raise ValueError(f"rows must be flat indices into B*T or \"cls\", got {rows!r}")
                rows = np.arange(B) * T
            rows = np.asarray(rows)
            if rows.size and not np.issubdtype(rows.dtype, np.integer):
                raise ValueError(f"rows must be integer flat indices into B*T, got dtype {rows.dtype}")
            rows = rows.astype(np.int64).reshape(-1)
            if rows.size and (rows.min() < 0 or rows.max() >= B * T):
                raise ValueError(f"rows must be flat indices into the {B} x {T} batch, in 0..{B * T - 1}")
            rows = np.union1d(rows, np.arange(B) * T) if self.has_pooler else np.unique(rows)  # sorted, distinct
        position_ids = roberta_position_ids(input_ids, cfg.pad_token_id) if cfg.roberta_positions else None
        relative = getattr(cfg, "relative_positions", False)  # DeBERTa (models/deberta.py)
        token_mask = attention_mask if relative and additive_mask is not None else None
        x, c_emb = embedding_forward(params, prefix, input_ids, token_type_ids, cfg.layer_norm_eps,
                                     cfg.hidden_dropout_prob, rng, training, position_ids,
                                     absolute_positions=getattr(cfg, "position_biased_input", True),
                                     token_mask=token_mask)  # (B, T, E)
        shared = None
        if relative:  # the layers' attention reads this instead of an additive mask: the pair mask, the relative
            # embeddings after encoder.LayerNorm (normalised once, here, for every layer) and the index table
            shared = additive_mask = relative_attention_forward(params, prefix, cfg, attention_mask,
                                                                input_ids.shape[1])
        c_proj = None
        if self.projection:  # as HF ALBERT and ELECTRA: after the embeddings' LayerNorm and dropout
            w, b = params[self.projection + "weight"], params[self.projection + "bias"]  # (H, E), (H,)
            x, c_proj = linear_forward(x, w, b)  # (B, T, H)
        hidden_states, attentions, c_layers = [x], [], []
        recompute = m.recompute
        L = cfg.num_hidden_layers
        for i in range(L):
            layer_rows = rows if i == L - 1 else None  # the last layer only: the others' outputs are all read
            # recompute: remember the input and the dropout stream's state instead of the cache (see the top)
            start = ((x, type(rng.bit_generator), rng.bit_generator.state, additive_mask, training, layer_rows)
                     if recompute else None)
            # x (B, T, H) or (R, H), probs (B, A, T, T). With recompute the layer's cache is dropped (its backward
            # runs the layer again), so the layer skips what only a backward reads: in forward_only's evaluations
            # and inference, and in a recomputing step's first pass.
            x, probs, c = encoder_layer_forward(x, params, self.layer_prefix(i), additive_mask, cfg, rng, training,
                                                layer_rows, for_backward=not recompute)
            c_layers.append(start if recompute else c)
            hidden_states.append(x)
            if output_attentions:
                attentions.append(probs)
        c_final = None
        if cfg.layer_norm_position == "pre":  # pre-LN: the residual stream is normalised once, at the end
            w, b = params[prefix + "LayerNorm.weight"], params[prefix + "LayerNorm.bias"]  # (H,), (H,)
            x, c_final = layernorm_forward(x, w, b, cfg.layer_norm_eps)  # (B, T, H)
        pooled = c_pool = cls_rows = None
        if self.has_pooler:
            cls_states = x  # (B, T, H): the pooler reads [:, 0]
            if rows is not None:  # where each sequence's [CLS] is among the rows (forward added them)
                cls_rows = np.searchsorted(rows, np.arange(input_ids.shape[0]) * input_ids.shape[1])  # (B,)
                cls_states = x[cls_rows][:, None]  # (B, 1, H)
            pooled, c_pool = pooler_forward(cls_states, params, prefix)  # (B, H)
        self._cache = (c_emb, c_proj, c_layers, c_final, c_pool, x.shape, recompute, cls_rows, shared)
        return ModelOutput(last_hidden_state=x, pooler_output=pooled, rows=rows,
                           attentions=attentions if output_attentions else None,
                           hidden_states=hidden_states if output_hidden_states else None)

    def backward(self, d_last_hidden_state=None, d_pooler_output=None):
        if self._cache is None:
            raise needs_forward()
        m, cfg, prefix = self.model, self.model.config, self.prefix
        params, grads = m.bert_view(m.params), m.bert_view(m.grads)
        c_emb, c_proj, c_layers, c_final, c_pool, shape, recompute, cls_rows, shared = self._cache  # shape: x's
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
            B = shape[0] if cls_rows is None else len(cls_rows)
            if d_pooled.shape != (B, shape[-1]):
                raise ValueError(f"d_pooler_output has shape {d_pooled.shape}, expected {(B, shape[-1])}")
            d_cls = pooler_backward(d_pooled, c_pool, params, grads, prefix)  # (B, H): only [CLS] feeds the pooler
            if cls_rows is None:
                dx[:, 0] += d_cls
            else:
                dx[cls_rows] += d_cls
        self._cache = None  # the layers' activations are freed one by one, as soon as their backward is done
        if c_final is not None:  # dx (B, T, H) before the final LayerNorm
            dx = layernorm_backward(dx, c_final, params[prefix + "LayerNorm.weight"],
                                    grads[prefix + "LayerNorm.weight"], grads[prefix + "LayerNorm.bias"])
        for i in reversed(range(cfg.num_hidden_layers)):
            c = c_layers.pop()
            if recompute:  # as the forward ran (the setting may have changed since)
                c = self._recompute_layer(i, *c)
            dx = encoder_layer_backward(dx, c, params, grads, self.layer_prefix(i), cfg)
            c = None  # this layer's activations go now, before the layer below recomputes its own
        if shared is not None:  # the relative embeddings' gradient, summed over the layers, through their LayerNorm
            relative_attention_backward(shared, params, grads, prefix)
        if c_proj is not None:
            dx = linear_backward(dx, c_proj, params[self.projection + "weight"], grads[self.projection + "weight"],
                                 grads[self.projection + "bias"])  # (B, T, E)
        embedding_backward(dx, c_emb, params, grads, prefix, cfg.pad_token_id)

    def _recompute_layer(self, i, x, bit_generator, rng_state, additive_mask, training, rows):
        """Layer i's forward again, on its saved input and with the dropout masks it drew the first time; returns
        its cache. A generator of the same kind, set to the saved state, replays the stream; the model's own
        generator is not touched, so the steps that follow draw what they would have drawn without recompute."""
        m = self.model
        replay = np.random.Generator(bit_generator())
        replay.bit_generator.state = rng_state
        _, _, cache = encoder_layer_forward(x, m.bert_view(m.params), self.layer_prefix(i), additive_mask,
                                            m.config, replay, training, rows)
        return cache


class BertModel(Model):
    """The bare encoder: `.last_hidden_state` (B, T, H) and `.pooler_output` (B, H).

    `BertModel(config, seed=0, dtype=np.float32, add_pooling_layer=True)` draws BERT's initial weights from `seed`;
    `BertModel.from_pretrained(folder)` loads a checkpoint (a Hugging Face folder, a run, "minilm")."""

    def __init__(self, config, seed=0, dtype=np.float32, add_pooling_layer=True, init_weights=True):
        self.add_pooling_layer = add_pooling_layer
        super().__init__(config, seed=seed, dtype=dtype, init_weights=init_weights)
        self.encoder = BertEncoder(self, "", add_pooling_layer)

    def param_shapes(self):
        return bert_param_shapes(self.config, "", pooler=self.add_pooling_layer)

    def forward(self, input_ids, *, token_type_ids=None, attention_mask=None, output_attentions=False,
                output_hidden_states=False):
        """Run the encoder: `model(input_ids, attention_mask=mask)`.

        input_ids (B, T) integer token ids (a 1-D (T,) is one sequence); every other input, here and in every
        model's forward, is keyword-only, since transformers' positional order (input_ids, attention_mask,
        token_type_ids) differs from BERT's own: token_type_ids (B, T) segment ids 0/1 (default all 0),
        attention_mask (B, T) 1 for tokens, 0 for padding (default all 1). `model(**tokenizer.encode_batch(texts))`
        passes all three.

        Returns a ModelOutput: `.last_hidden_state` (B, T, H), `.pooler_output` (B, H) (tanh(dense) of [CLS];
        None without a pooler), `.attentions` (L arrays (B, A, T, T), with output_attentions=True: after attention
        dropout in training mode, as transformers returns them), `.hidden_states` (L + 1 arrays (B, T, H): the
        embeddings' output, then every layer's, with output_hidden_states=True). The activations are kept for
        `backward()`; call `model.eval()` first for inference (dropout off)."""
        return self.encoder.forward(input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask,
                                    output_attentions=output_attentions, output_hidden_states=output_hidden_states)

    __call__ = forward

    def backward(self, d_last_hidden_state=None, d_pooler_output=None):
        """Accumulate into `grads` the gradient of a loss whose derivatives w.r.t. the outputs are given."""
        self.encoder.backward(d_last_hidden_state, d_pooler_output)
