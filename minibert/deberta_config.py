"""DebertaV2Config: a BertConfig with DeBERTa-v2/v3's relative-attention fields, under Hugging Face's names.

DeBERTa (He et al. 2020) keeps BERT's post-LN layer and changes what the attention scores read: besides content
against content (Q K^T) they add content against relative position (c2p) and relative position against content
(p2c), read from a table of relative-position embeddings shared by every layer (layers/disentangled_attention.py).

    field                     meaning (Hugging Face's defaults)
    relative_attention        add the relative terms at all (false)
    pos_att_type              which: "c2p", "p2c", both; a list or "p2c|c2p" (none)
    max_relative_positions    relative distances kept without buckets; < 1: max_position_embeddings (-1)
    position_buckets          > 0: log buckets, this many on each side (DeBERTa-v3: 256) (-1: none)
    norm_rel_ebd              "layer_norm": the relative embeddings pass encoder.LayerNorm first ("none")
    share_att_key             the position projections reuse query_proj / key_proj (false)
    position_biased_input     add absolute position embeddings to the input (true; v3: false)
    type_vocab_size           0: no token-type embeddings (0)
    pooler_hidden_act         the classifier pooler's activation ("gelu")
    pooler_dropout            dropout before the pooler's dense (0)
    layer_norm_eps            1e-7

Hugging Face's options that minibert does not build are refused with one line: conv_kernel_size > 0 (the
xlarge models' convolution after the first layer), talking heads (DeBERTa v1), legacy false (the other MLM head),
an embedding_size or pooler_hidden_size other than hidden_size, an attention_head_size other than
hidden_size / num_attention_heads.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar

from minibert.config import SUPPORTED_ACTIVATIONS, BertConfig, _is_int, _shown

POS_ATT_TYPES = ("c2p", "p2c")


def _pos_att_list(value) -> list[str]:
    """pos_att_type as Hugging Face reads it: a list, or a string "p2c|c2p" (None: no relative terms)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [x.strip() for x in value.lower().split("|") if x.strip()]
    return list(value)


@dataclass
class DebertaV2Config(BertConfig):
    type_vocab_size: int = 0
    layer_norm_eps: float = 1e-7
    model_type: str = "deberta-v2"
    relative_attention: bool = False
    max_relative_positions: int = -1
    position_buckets: int = -1
    pos_att_type: list = field(default_factory=list)
    norm_rel_ebd: str = "none"
    share_att_key: bool = False
    position_biased_input: bool = True
    pooler_hidden_act: str = "gelu"
    pooler_dropout: float = 0.0
    relative_positions: ClassVar[bool] = True  # marks the config that BertConfig.validate asks for
    family_model_type: ClassVar[str] = "deberta-v2"  # BertConfig.from_dict and .preset give this class for it

    # config.json options of transformers' DeBERTa that minibert does not build: key -> (value meaning "off",
    # the end of the one-line refusal)
    REFUSED: ClassVar[dict[str, tuple[Any, str]]] = {
        "conv_kernel_size": (0, "the convolution layer after the first layer (conv_kernel_size > 0) is not built"),
        "talking_head": (False, "talking heads (DeBERTa v1) are not built"),
        "legacy": (True, "only the legacy MLM head (cls.predictions, legacy true) is built"),
    }

    def validate(self) -> None:
        super().validate()
        if self.model_type != "deberta-v2":
            raise ValueError(f"DebertaV2Config.model_type must be 'deberta-v2', got {self.model_type!r}")
        for name in ("relative_attention", "share_att_key", "position_biased_input"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"DebertaV2Config.{name} must be true or false, got {_shown(getattr(self, name))}")
        for name in ("max_relative_positions", "position_buckets"):
            if not _is_int(getattr(self, name)):
                raise ValueError(f"DebertaV2Config.{name} must be an integer, got {_shown(getattr(self, name))}")
            setattr(self, name, int(getattr(self, name)))
        if self.position_buckets == 1:
            raise ValueError("DebertaV2Config.position_buckets 1 has no log buckets (their middle is 0); use 2 or "
                             "more, or -1 for none")
        self.pos_att_type = _pos_att_list(self.pos_att_type)
        bad = [t for t in self.pos_att_type if t not in POS_ATT_TYPES]
        if bad or len(set(self.pos_att_type)) != len(self.pos_att_type):
            raise ValueError(f"DebertaV2Config.pos_att_type {self.pos_att_type!r} is not supported; expected "
                             f"c2p, p2c or both, each once")
        if not isinstance(self.norm_rel_ebd, str):
            raise ValueError(f"DebertaV2Config.norm_rel_ebd must be a string ('layer_norm' or 'none'), got "
                             f"{_shown(self.norm_rel_ebd)}")
        if self.pooler_hidden_act not in SUPPORTED_ACTIVATIONS:
            raise ValueError(f"DebertaV2Config.pooler_hidden_act {self.pooler_hidden_act!r} is not supported; "
                             f"expected one of {', '.join(SUPPORTED_ACTIVATIONS)}")
        if not 0.0 <= float(self.pooler_dropout) < 1.0:
            raise ValueError(f"DebertaV2Config.pooler_dropout must be in [0, 1), got {self.pooler_dropout!r}")
        for key, (off, why) in self.REFUSED.items():
            value = self.extra.get(key, off)
            if value != off and not (key == "conv_kernel_size" and _is_int(value) and value <= 0):
                raise ValueError(f"{key} {value!r} is not supported: {why}")
        if self.embedding_size is not None and self.embedding_size != self.hidden_size:
            raise ValueError(f"embedding_size {self.embedding_size} is not supported for DeBERTa: its embed_proj "
                             f"(embedding_size != hidden_size {self.hidden_size}) is not built")
        for key, expected in (("pooler_hidden_size", self.hidden_size), ("attention_head_size", self.head_size)):
            value = self.extra.get(key, expected)
            if value != expected:
                raise ValueError(f"{key} {value!r} is not supported: minibert's DeBERTa needs {expected}")

    # ---------------------------------------------------------------- what the encoder reads
    @property
    def has_token_types(self) -> bool:
        """type_vocab_size 0: no token-type embeddings; given token_type_ids are ignored, as in transformers."""
        return self.type_vocab_size > 0

    @property
    def relative_span(self) -> int:
        """A: relative positions are indexed 0..2A-1 (position_buckets when > 0, else max_relative_positions, which
        falls back to max_position_embeddings below 1). rel_embeddings has 2A rows."""
        if self.position_buckets > 0:
            return self.position_buckets
        return self.max_positions_for_buckets

    @property
    def max_positions_for_buckets(self) -> int:
        """max_relative_positions, or max_position_embeddings when it is below 1 (transformers' rule)."""
        return self.max_relative_positions if self.max_relative_positions >= 1 else self.max_position_embeddings

    @property
    def normalise_rel_embeddings(self) -> bool:
        """norm_rel_ebd holds "layer_norm": the relative embeddings pass encoder.LayerNorm once per forward."""
        return "layer_norm" in [x.strip() for x in self.norm_rel_ebd.lower().split("|")]

    @property
    def separate_position_projections(self) -> tuple[str, ...]:
        """The position projections of their own (share_att_key false): pos_key_proj for c2p, pos_query_proj for
        p2c."""
        if not self.relative_attention or self.share_att_key:
            return ()
        return tuple(name for t, name in (("c2p", "pos_key_proj"), ("p2c", "pos_query_proj"))
                     if t in self.pos_att_type)

    # ---------------------------------------------------------------- config.json
    @classmethod
    def from_dict(cls, d: dict[str, Any], source: str = "config") -> "DebertaV2Config":
        if d.get("model_type") != "deberta-v2":
            raise ValueError(f"{source}: model_type is {d.get('model_type')!r}, expected 'deberta-v2'")
        names = {f.name for f in dataclasses.fields(cls)} - {"extra"}
        known = {k: v for k, v in d.items() if k in names}
        extra = {k: v for k, v in d.items() if k not in names}
        if known.get("pos_att_type") is None:
            known.pop("pos_att_type", None)
        try:
            return cls(**known, extra=extra)
        except (TypeError, ValueError) as e:
            raise ValueError(f"{source}: {e}") from None

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        if "position_embedding_type" not in self.extra:
            d.pop("position_embedding_type", None)  # a BERT key, not DeBERTa's
        d["pos_att_type"] = list(self.pos_att_type)
        return d
