"""DistilBertConfig: a BertConfig that reads and writes Hugging Face's DistilBERT config.json.

DistilBERT (Sanh et al. 2019) is BERT's post-LN encoder without token-type embeddings and without a pooler,
so minibert runs it on the same encoder; only the config's field names differ:

    DistilBERT config.json      minibert (BertConfig) field
    dim                         hidden_size
    n_layers                    num_hidden_layers
    n_heads                     num_attention_heads
    hidden_dim                  intermediate_size
    dropout                     hidden_dropout_prob
    attention_dropout           attention_probs_dropout_prob
    activation                  hidden_act

Hugging Face's DistilBERT hard-codes LayerNorm's eps at 1e-12 and has no dropout after the attention's output
projection (`out_lin`); `attention_output_dropout = False` tells the encoder layer so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from minibert.config import BertConfig

DISTILBERT_FIELDS = {
    "dim": "hidden_size", "n_layers": "num_hidden_layers", "n_heads": "num_attention_heads",
    "hidden_dim": "intermediate_size", "dropout": "hidden_dropout_prob",
    "attention_dropout": "attention_probs_dropout_prob", "activation": "hidden_act",
}
SHARED_FIELDS = ("vocab_size", "max_position_embeddings", "initializer_range", "pad_token_id")
LAYER_NORM_EPS = 1e-12  # fixed in transformers' DistilBERT


@dataclass
class DistilBertConfig(BertConfig):
    type_vocab_size: int = 1  # DistilBERT has no token types; kept for the shared input checks
    model_type: ClassVar[str] = "distilbert"
    attention_output_dropout: ClassVar[bool] = False
    has_token_types: ClassVar[bool] = False

    def __post_init__(self) -> None:
        # transformers' defaults for the task heads' dropout (config.json keys without a BertConfig field)
        self.extra.setdefault("seq_classif_dropout", 0.2)
        self.extra.setdefault("qa_dropout", 0.1)
        super().__post_init__()

    def validate(self) -> None:
        super().validate()
        if self.layer_norm_eps != LAYER_NORM_EPS:
            raise ValueError(f"DistilBertConfig.layer_norm_eps must be {LAYER_NORM_EPS} (transformers' DistilBERT "
                             f"fixes it), got {self.layer_norm_eps!r}")

    @classmethod
    def from_dict(cls, d: dict[str, Any], source: str = "config") -> "DistilBertConfig":
        """A config from DistilBERT's config.json dict (dim, n_layers, ...; or a transformers DistilBertConfig's
        `to_dict()`), fields renamed to BertConfig's (the table at the top); other keys kept in `extra`."""
        if d.get("model_type") != "distilbert":
            raise ValueError(f"{source}: model_type is {d.get('model_type')!r}, expected 'distilbert'")
        if d.get("sinusoidal_pos_embds"):
            raise ValueError(f"{source}: sinusoidal_pos_embds is true; minibert supports DistilBERT with learned "
                             f"position embeddings only")
        known = {ours: d[theirs] for theirs, ours in DISTILBERT_FIELDS.items() if theirs in d}
        known.update({k: d[k] for k in SHARED_FIELDS if k in d})
        extra = {k: v for k, v in d.items() if k not in DISTILBERT_FIELDS and k not in SHARED_FIELDS}
        try:
            return cls(**known, extra=extra)
        except (TypeError, ValueError) as e:
            raise ValueError(f"{source}: {e}") from None

    @classmethod
    def from_bert(cls, config: BertConfig, **overrides: Any) -> "DistilBertConfig":
        """The DistilBERT config of a BERT's encoder (same sizes), with `overrides` (num_hidden_layers, ...)."""
        if config.layer_norm_eps != LAYER_NORM_EPS:
            raise ValueError(f"the teacher's layer_norm_eps is {config.layer_norm_eps!r}; a DistilBERT student "
                             f"needs {LAYER_NORM_EPS} (transformers' DistilBERT fixes it)")
        names = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
                 "hidden_act", "hidden_dropout_prob", "attention_probs_dropout_prob", "max_position_embeddings",
                 "initializer_range", "pad_token_id")
        values = {name: getattr(config, name) for name in names}
        values.update(overrides)
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        """The config.json dict under DistilBERT's field names (what transformers' DistilBertConfig reads)."""
        d = {k: v for k, v in self.extra.items() if k not in ("position_embedding_type", "type_vocab_size")}
        d.update({theirs: getattr(self, ours) for theirs, ours in DISTILBERT_FIELDS.items()})
        d.update({k: getattr(self, k) for k in SHARED_FIELDS})
        d["model_type"] = "distilbert"
        d["sinusoidal_pos_embds"] = False
        return d
