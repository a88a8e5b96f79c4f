"""BertForPreTraining (masked LM + next-sentence prediction) and BertForMaskedLM.

With labels, the MLM decoder runs only at the labelled positions ("sparse prediction", as google-research/bert
and Cramming do): with a vocabulary of 8192 the decoder over every position costs more than the whole encoder,
and the loss is the same because unlabelled positions contribute nothing to it. Then `.prediction_logits` is
(M, V), one row per labelled position, and `.masked_positions` (M,) holds their flat indices into B*T
(`np.unravel_index(masked_positions, (B, T))` gives (row, column)).

The same reasoning reaches one layer further down (the sparse last layer, `Model.sparse_last_layer`, on by
default): the last encoder layer's output is read only at those positions (and at [CLS] by the pooler), so after
its attention, which still reads every position, it runs on those rows only (models/bert.py,
layers/encoder_layer.py). The loss, the logits and every gradient are those of the full layer (with dropout on,
in distribution: that layer draws fewer dropout numbers); a mini step at
15% masking does ~17% fewer FLOPs. It is off when the whole last hidden state is asked for
(output_hidden_states, or no labels).
"""

from __future__ import annotations

import numpy as np

from minibert.layers.heads import mlm_head_backward, mlm_head_forward, nsp_head_backward, nsp_head_forward
from minibert.layers.loss import IGNORE_INDEX, cross_entropy_backward, cross_entropy_forward
from minibert.models.base import Model, check_grad, needs_forward
from minibert.models.bert import BertEncoder, bert_param_shapes
from minibert.models.checks import check_targets
from minibert.models.outputs import ModelOutput


def mlm_head_shapes(config):
    H, E = config.hidden_size, config.embedding_width
    # The decoder weight is the word-embedding matrix (tied), so only its bias is a parameter of its own. With
    # factorised embeddings (ALBERT) the transform maps H -> E, the width of that matrix.
    return {
        "cls.predictions.bias": (config.vocab_size,),
        "cls.predictions.transform.dense.weight": (E, H),
        "cls.predictions.transform.dense.bias": (E,),
        "cls.predictions.transform.LayerNorm.weight": (E,),
        "cls.predictions.transform.LayerNorm.bias": (E,),
    }


class _MaskedLMBase(Model):
    base_prefix = "bert."
    has_pooler = True
    mlm_names = None  # the MLM head's parameter names (heads.MlmHeadNames); None: BERT's "cls.predictions.*"
    project_name = None  # the E -> H projection's name, for a family with embedding_size != hidden_size

    @property
    def view_prefix(self) -> str:
        """The body's prefix in the names the shared code reads (through bert_view): base_prefix, except for a
        family stored under other names and read as BERT's (DistilBERT: "bert.")."""
        return self.base_prefix

    def __init__(self, config, seed=0, dtype=np.float32, init_weights=True):
        if config.extra.get("tie_word_embeddings") is False:  # (a task model may load such a body: only the head)
            raise ValueError("tie_word_embeddings false is not supported: minibert's masked-LM head always reads "
                             "its output weights from the word embeddings")
        super().__init__(config, seed=seed, dtype=dtype, init_weights=init_weights)
        self.bert = BertEncoder(self, self.view_prefix, pooler=self.has_pooler, project_name=self.project_name)
        self._cache = None

    def _last_layer_rows(self, labels, output_hidden_states):
        """The flat positions (M,) the MLM loss reads, for the encoder's `rows` (the sparse last layer); None to
        run the last layer everywhere."""
        if labels is None or output_hidden_states or not self.sparse_last_layer:
            return None
        positions = np.flatnonzero(labels.reshape(-1) != IGNORE_INDEX)  # (M,)
        return positions if positions.size else None

    def _mlm_forward(self, sequence_output, labels, rows=None):
        """Logits (and loss, with labels). Returns (logits, loss, masked_positions, cache). sequence_output is
        (B, T, H), or (R, H) at the flat positions `rows` (the encoder's output under a sparse last layer)."""
        cfg = self.config
        if labels is None:
            B, T, H = sequence_output.shape
            logits, _ = mlm_head_forward(sequence_output.reshape(B * T, H), self.bert_view(self.params),
                                         self.view_prefix, cfg, self.mlm_names)
            return logits.reshape(B, T, cfg.vocab_size), None, None, None  # (B, T, V)
        labels = labels.reshape(-1)  # (B*T,), checked by check_targets
        positions = np.flatnonzero(labels != IGNORE_INDEX)  # (M,) flat indices of the tokens to predict
        H = sequence_output.shape[-1]
        where = positions if rows is None else np.searchsorted(rows, positions)  # (M,) their rows in the output
        h = sequence_output.reshape(-1, H)[where]  # (M, H)
        logits, c_head = mlm_head_forward(h, self.bert_view(self.params), self.view_prefix, cfg,
                                          self.mlm_names)  # (M, V)
        loss, c_ce = cross_entropy_forward(logits, labels[positions])
        return logits, loss, positions, (where, c_head, c_ce, sequence_output.shape)

    def _mlm_backward(self, cache, loss_scale, d_logits=None):
        """d_logits (M, V): the gradient of another loss on the same logits (distillation), added in. Returns the
        gradient w.r.t. the sequence output, of its shape: (B, T, H) or (R, H)."""
        positions, c_head, c_ce, shape = cache  # positions: the predicted rows of the sequence output
        if d_logits is not None:  # checked before any gradient is accumulated
            d_logits = check_grad("d_logits", d_logits, (len(positions), self.config.vocab_size),
                                  " (the prediction logits: one row per labelled position)")
        dlogits = cross_entropy_backward(c_ce, loss_scale, overwrite=True)  # (M, V), over the cached softmax
        if d_logits is not None:
            dlogits += d_logits
        dh = mlm_head_backward(dlogits, c_head, self.bert_view(self.params), self.bert_view(self.grads),
                               self.view_prefix, self.config, self.mlm_names)  # (M, H)
        dseq = np.zeros(shape, dtype=self.dtype)  # (B, T, H) or (R, H)
        dseq.reshape(-1, shape[-1])[positions] = dh  # each predicted position's row, written once into zeros
        return dseq


class BertForPreTraining(_MaskedLMBase):
    """BERT's pre-training model: masked-LM logits and next-sentence logits; loss = MLM loss + NSP loss."""

    def param_shapes(self):
        shapes = bert_param_shapes(self.config, "bert.", pooler=True)
        shapes.update(mlm_head_shapes(self.config))
        shapes["cls.seq_relationship.weight"] = (2, self.config.hidden_size)
        shapes["cls.seq_relationship.bias"] = (2,)
        return shapes

    def forward(self, input_ids, *, token_type_ids=None, attention_mask=None, labels=None, next_sentence_label=None,
                output_attentions=False, output_hidden_states=False):
        """Masked-LM and next-sentence logits, and with targets their losses: `model(ids, attention_mask=mask,
        labels=labels, next_sentence_label=nsl)`; then `model.backward()`.

        input_ids (B, T), token_type_ids (B, T), attention_mask (B, T) as BertModel.forward; labels (B, T) the
        original token at each masked position, -100 elsewhere; next_sentence_label (B,) 0 = B follows A, 1 = B is
        random.

        Returns `.loss` (mlm_loss + nsp_loss, of the targets given), `.mlm_loss`, `.nsp_loss`,
        `.seq_relationship_logits` (B, 2), `.prediction_logits`: without labels (B, T, V) at every position;
        WITH labels (M, V), one row per labelled position only (the decoder runs there alone, see the module's
        top; transformers gives (B, T, V)), `.masked_positions` (M,) saying which (flat indices into B*T).
        For (B, T, V) with labels, run once without labels (e.g. under `forward_only(model)`)."""
        self._cache = None  # a forward that fails must not leave an older batch's caches for backward()
        labels, next_sentence_label = check_targets(input_ids, labels, next_sentence_label, self.config)
        out = self.bert.forward(input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask,
                                output_attentions=output_attentions, output_hidden_states=output_hidden_states,
                                rows=self._last_layer_rows(labels, output_hidden_states))
        logits, mlm_loss, positions, c_mlm = self._mlm_forward(out.last_hidden_state, labels, out.rows)
        nsp_logits, c_nsp = nsp_head_forward(out.pooler_output, self.params)  # (B, 2)
        nsp_loss = c_nsp_ce = None
        if next_sentence_label is not None:
            nsp_loss, c_nsp_ce = cross_entropy_forward(nsp_logits, next_sentence_label)
        parts = [x for x in (mlm_loss, nsp_loss) if x is not None]
        loss = sum(parts) if parts else None
        self._cache = (c_mlm, c_nsp, c_nsp_ce)
        return ModelOutput(loss=loss, mlm_loss=mlm_loss, nsp_loss=nsp_loss, prediction_logits=logits,
                           seq_relationship_logits=nsp_logits, masked_positions=positions,
                           attentions=out.attentions, hidden_states=out.hidden_states)

    __call__ = forward

    def backward(self, loss_scale=1.0, mlm_scale=None):
        """Accumulate d(loss_scale * loss)/d(param) into `grads` (loss_scale = 1/k for k accumulation steps).

        mlm_scale, when given, weights the MLM part instead (loss_scale then weights NSP only): data-parallel
        training weights each rank's MLM loss by its share of the masked tokens (training/distributed.py)."""
        if self._cache is None or (self._cache[0] is None and self._cache[2] is None):
            raise needs_forward("a forward() with labels and/or next_sentence_label")
        c_mlm, c_nsp, c_nsp_ce = self._cache
        mlm_scale = loss_scale if mlm_scale is None else mlm_scale
        dseq = self._mlm_backward(c_mlm, mlm_scale) if c_mlm is not None else None
        dpooled = None
        if c_nsp_ce is not None:
            dpooled = nsp_head_backward(cross_entropy_backward(c_nsp_ce, loss_scale), c_nsp, self.params, self.grads)
        self.bert.backward(dseq, dpooled)
        self._cache = None


class BertForMaskedLM(_MaskedLMBase):
    """Masked-LM only (no pooler, no NSP head), as Hugging Face's BertForMaskedLM."""

    has_pooler = False

    def param_shapes(self):
        shapes = bert_param_shapes(self.config, "bert.", pooler=False)
        shapes.update(mlm_head_shapes(self.config))
        return shapes

    def forward(self, input_ids, *, token_type_ids=None, attention_mask=None, labels=None, output_attentions=False,
                output_hidden_states=False):
        """Masked-LM logits, and with labels the loss: `model(ids, attention_mask=mask, labels=labels)`.

        input_ids (B, T), token_type_ids (B, T), attention_mask (B, T) as BertModel.forward; labels (B, T) the
        original token at each masked position, -100 elsewhere.

        Without labels, `.logits` (B, T, V) at every position, as transformers. WITH labels, unlike transformers'
        (B, T, V), `.logits` (= `.prediction_logits`) is (M, V): one row per labelled position only, the decoder
        (and the last layer after its attention) run there alone (the module's top); `.masked_positions` (M,)
        holds their flat indices into B*T (`np.unravel_index(out.masked_positions, (B, T))` gives row and
        column). The loss is that of the full logits. For (B, T, V) at every position, call forward without
        labels: in eval mode, `full.reshape(B * T, V)[out.masked_positions]` are the (M, V) rows, up to rounding.
        `.loss` is the mean cross-entropy over the labelled positions (0 when there are none; transformers
        gives NaN)."""
        self._cache = None
        labels, _ = check_targets(input_ids, labels, None, self.config)
        out = self.bert.forward(input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask,
                                output_attentions=output_attentions, output_hidden_states=output_hidden_states,
                                rows=self._last_layer_rows(labels, output_hidden_states))
        logits, loss, positions, c_mlm = self._mlm_forward(out.last_hidden_state, labels, out.rows)
        self._cache = c_mlm
        return ModelOutput(loss=loss, logits=logits, prediction_logits=logits, masked_positions=positions,
                           attentions=out.attentions, hidden_states=out.hidden_states)

    __call__ = forward

    def backward(self, loss_scale=1.0, d_logits=None, d_last_hidden_state=None):
        """d(loss_scale * loss)/d(param) into `grads`; a distillation loss adds its gradients w.r.t. the
        prediction logits (M, V) and the last hidden state (B, T, H) through `d_logits`, `d_last_hidden_state`."""
        if self._cache is None:
            raise needs_forward("a forward() with labels")
        if d_last_hidden_state is not None:  # checked before any gradient is accumulated (d_logits: _mlm_backward)
            d_last_hidden_state = check_grad(
                "d_last_hidden_state", d_last_hidden_state, self._cache[3],
                ": a gradient w.r.t. the whole last hidden state needs a forward with output_hidden_states=True "
                "(which runs the last layer at every position)")
        dseq = self._mlm_backward(self._cache, loss_scale, d_logits)  # (B, T, H), or (R, H): sparse last layer
        if d_last_hidden_state is not None:
            dseq += d_last_hidden_state
        self.bert.backward(dseq, None)
        self._cache = None
