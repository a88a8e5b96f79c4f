"""BertConfig: the model's hyper-parameters, with Hugging Face's field names.

Because the field names are exactly those of `transformers.BertConfig`, a `config.json` written by Hugging Face
loads here unchanged, and one written here loads there.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from minibert.layers.activations import ACTIVATIONS

SUPPORTED_ACTIVATIONS = tuple(ACTIVATIONS)  # gelu (exact erf), gelu_new / gelu_pytorch_tanh (tanh), relu

# Hugging Face model types minibert builds from the same encoder through config switches (docs/descendants.md):
#   bert                   post-LN, absolute positions 0..T-1
#   roberta                as bert, but positions count from pad_token_id + 1 and skip padding (one token type)
#   roberta-prelayernorm   roberta's positions, pre-LN layers (LayerNorm before attention and feed-forward) and
#                          a final LayerNorm after the last layer
#   albert                 factorised embeddings (embedding_size), one layer's weights shared by every layer
#   electra                BERT's body under ELECTRA's Hugging Face names (models/electra.py: the names are kept
#                          as they are, no renaming); the config may have an embedding_size
#   distilbert             BERT's post-LN body without token types, pooler or the dropout after the attention
#                          output; its config.json has other field names, so it is a DistilBertConfig
#                          (below), its models read BERT's names through a view (models/distilbert.py)
#   deberta-v2             post-LN layers whose attention adds relative-position terms (disentangled attention),
#                          embeddings without absolute positions; its config.json has more fields, so it is a
#                          DebertaV2Config (deberta_config.py), its models keep Hugging Face's names (models/deberta.py)
MODEL_TYPES = ("bert", "roberta", "roberta-prelayernorm", "albert", "electra", "distilbert", "deberta-v2")

# model_type -> the BertConfig subclass that reads and writes that family's config.json. A subclass names the
# family it holds (`family_model_type`) and registers itself here, so this module imports none of them.
CONFIG_CLASSES: dict[str, type] = {}

# name -> (num_hidden_layers, hidden_size, num_attention_heads, intermediate_size, vocab_size, max_position_embeddings)
PRESETS: dict[str, tuple[int, int, int, int, int, int]] = {
    "tiny": (2, 128, 2, 512, 8192, 64),
    "mini": (3, 192, 4, 768, 8192, 64),  # the Mini-BERT our users learn from (~3M parameters)
    "small": (4, 512, 8, 2048, 8192, 128),
    "base": (12, 768, 12, 3072, 30522, 512),
    "large": (24, 1024, 16, 4096, 30522, 512),
}

# The descendants of mini (docs/descendants.md): name -> (base preset, overrides). RoBERTa's positions start at
# pad_token_id + 1 = 1, so 64 tokens need 65 position rows.
FAMILY_PRESETS: dict[str, tuple[str, dict[str, Any]]] = {
    "roberta-mini": ("mini", dict(model_type="roberta", type_vocab_size=1, max_position_embeddings=65)),
    "preln-mini": ("mini", dict(model_type="roberta-prelayernorm", max_position_embeddings=65)),
    "albert-mini": ("mini", dict(model_type="albert", embedding_size=64, hidden_act="gelu_new")),
    # DeBERTa-v3's recipe at mini's sizes: relative attention both ways (c2p and p2c) through log buckets (half as
    # many as positions, as v3's 256 for 512), keys shared with the content projections, no absolute positions,
    # no token types
    "deberta-mini": ("mini", dict(model_type="deberta-v2", type_vocab_size=0, layer_norm_eps=1e-7,
                                  relative_attention=True, position_buckets=32, max_relative_positions=-1,
                                  pos_att_type=["p2c", "c2p"], norm_rel_ebd="layer_norm", share_att_key=True,
                                  position_biased_input=False)),
}
PRESET_NAMES = (*PRESETS, *FAMILY_PRESETS)

INT_FIELDS = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
              "max_position_embeddings", "type_vocab_size")  # positive integers
FLOAT_FIELDS = ("hidden_dropout_prob", "attention_probs_dropout_prob", "initializer_range", "layer_norm_eps")

# Hugging Face config options that change the computation in ways minibert does not implement: each is accepted
# with the value that means what minibert computes (real checkpoints' config.json carry them), refused otherwise.
#   key -> (the values accepted, the first being the default; the end of the message refusing another)
UNSUPPORTED_OPTIONS: dict[str, tuple[tuple, str]] = {
    "position_embedding_type": (("absolute",), " (only 'absolute')"),  # relative_key(_query): other attention
    "is_decoder": ((False, None), ": minibert's models are encoders"),  # causal self-attention
    "add_cross_attention": ((False, None), ": minibert's models are encoders"),  # attention to an encoder's output
}


def _is_int(value) -> bool:
    """A Python or NumPy integer, not a bool."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _shown(value) -> str:
    """repr(value), with its type when that is not obvious from it (a number given as a string)."""
    return f"{value!r} ({type(value).__name__})" if isinstance(value, str) else repr(value)


@dataclass
class BertConfig:
    vocab_size: int = 30522
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-12
    pad_token_id: int = 0
    # Width E of the embedding tables (ALBERT, ELECTRA). None: E = hidden_size. When E != H the encoder
    # projects E -> H right after the embeddings (see models/bert.py); saved to config.json only when set.
    embedding_size: int | None = None
    model_type: str = "bert"  # one of MODEL_TYPES: which descendant of BERT this is
    # Keys of config.json that are not fields above (architectures, id2label, torch_dtype, ...): kept so that a
    # loaded config saves back without losing them.
    extra: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "family_model_type" in cls.__dict__:
            CONFIG_CLASSES[cls.family_model_type] = cls

    def __post_init__(self) -> None:
        self.validate()

    # ---------------------------------------------------------------- checks
    def validate(self) -> None:
        """Raise a one-line ValueError naming the field and what was expected. NumPy numbers are accepted and
        stored as Python ones (config.json is written with json, which knows only those)."""
        for name in INT_FIELDS:
            value = getattr(self, name)
            if name == "type_vocab_size" and self.model_type == "deberta-v2" and _is_int(value) and value == 0:
                continue  # DeBERTa: 0 means no token-type embeddings
            if not _is_int(value) or value < 1:
                raise ValueError(f"BertConfig.{name} must be a positive integer, got {_shown(value)}")
            setattr(self, name, int(value))
        if not _is_int(self.pad_token_id):
            raise ValueError(f"BertConfig.pad_token_id must be an integer, got {_shown(self.pad_token_id)}")
        self.pad_token_id = int(self.pad_token_id)
        for name in FLOAT_FIELDS:
            value = getattr(self, name)
            if not (_is_int(value) or isinstance(value, (float, np.floating))):
                raise ValueError(f"BertConfig.{name} must be a number, got {_shown(value)}")
            if isinstance(value, np.generic):
                setattr(self, name, float(value))
        if self.hidden_size % self.num_attention_heads != 0:
            raise ValueError(
                f"BertConfig.hidden_size ({self.hidden_size}) must be divisible by num_attention_heads "
                f"({self.num_attention_heads})")
        if self.hidden_act not in SUPPORTED_ACTIVATIONS:
            raise ValueError(
                f"BertConfig.hidden_act {self.hidden_act!r} is not supported; expected one of "
                f"{', '.join(SUPPORTED_ACTIVATIONS)}")
        for name in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
            p = getattr(self, name)
            if not 0.0 <= p < 1.0:
                raise ValueError(f"BertConfig.{name} must be in [0, 1), got {p!r}")
        for name in ("layer_norm_eps", "initializer_range"):
            if not getattr(self, name) > 0:
                raise ValueError(f"BertConfig.{name} must be > 0, got {getattr(self, name)!r}")
        if self.embedding_size is not None:
            if not _is_int(self.embedding_size) or self.embedding_size < 1:
                raise ValueError(f"BertConfig.embedding_size must be a positive integer or null, got "
                                 f"{_shown(self.embedding_size)}")
            self.embedding_size = int(self.embedding_size)
        if self.model_type not in MODEL_TYPES:
            raise ValueError(f"BertConfig.model_type {self.model_type!r} is not supported; expected one of "
                             f"{', '.join(MODEL_TYPES)}")
        if self.model_type == "distilbert" and not hasattr(type(self), "has_token_types"):
            raise ValueError("BertConfig.model_type 'distilbert' needs a DistilBertConfig "
                             "(minibert.distilbert_config), which reads and writes DistilBERT's field names")
        if self.model_type == "deberta-v2" and not hasattr(type(self), "relative_positions"):
            raise ValueError("BertConfig.model_type 'deberta-v2' needs a DebertaV2Config (minibert.deberta_config), "
                             "which holds DeBERTa's relative-attention fields")
        if self.roberta_positions and self.max_position_embeddings <= self.pad_token_id + 1:
            raise ValueError(f"BertConfig.max_position_embeddings ({self.max_position_embeddings}) leaves no position "
                             f"for a token: {self.model_type} positions start at pad_token_id + 1 "
                             f"({self.pad_token_id + 1})")
        if not 0 <= self.pad_token_id < self.vocab_size:
            raise ValueError(f"BertConfig.pad_token_id {self.pad_token_id} is outside the vocabulary "
                             f"[0, {self.vocab_size})")
        if not isinstance(self.extra, dict):
            raise ValueError(f"BertConfig.extra must be a dict of config.json's other keys, got "
                             f"{type(self.extra).__name__}")
        for key, (accepted, why) in UNSUPPORTED_OPTIONS.items():
            value = self.extra.get(key, accepted[0])
            if value not in accepted:
                shown = json.dumps(value) if isinstance(value, bool) else repr(value)  # as config.json has it
                raise ValueError(f"{key} {shown} is not supported{why}")

    @property
    def head_size(self) -> int:
        """D: each attention head's width, hidden_size / num_attention_heads."""
        return self.hidden_size // self.num_attention_heads

    @property
    def embedding_width(self) -> int:
        """E: the width of the embedding tables (embedding_size, or hidden_size when that is None)."""
        return self.hidden_size if self.embedding_size is None else self.embedding_size

    @property
    def layer_norm_position(self) -> str:
        """"post" (BERT: LayerNorm after each residual sum) or "pre" (LayerNorm before attention and feed-forward,
        plus a final LayerNorm): the pre-LN switch is model_type roberta-prelayernorm."""
        return "pre" if self.model_type == "roberta-prelayernorm" else "post"

    @property
    def roberta_positions(self) -> bool:
        """Position ids as RoBERTa makes them: pad_token_id + 1 + index, padding tokens at pad_token_id."""
        return self.model_type in ("roberta", "roberta-prelayernorm")

    @property
    def shared_layers(self) -> bool:
        """ALBERT: every layer runs with the weights of layer 0."""
        return self.model_type == "albert"

    @property
    def max_tokens(self) -> int:
        """The longest sequence the position table allows (RoBERTa's positions start at pad_token_id + 1)."""
        offset = self.pad_token_id + 1 if self.roberta_positions else 0
        return self.max_position_embeddings - offset

    @property
    def mlm_head_act(self) -> str:
        """RoBERTa's LM head applies exact GELU whatever hidden_act is; BERT's and ALBERT's use hidden_act."""
        return "gelu" if self.roberta_positions else self.hidden_act

    # ---------------------------------------------------------------- presets
    @classmethod
    def preset(cls, name: str, **overrides: Any) -> "BertConfig":
        """A named size, with any field overridden: `BertConfig.preset("mini", vocab_size=30522)`.

        Sizes (layers, hidden, heads, FFN, vocab, positions): tiny (2, 128, 2, 512, 8192, 64), mini (3, 192, 4, 768,
        8192, 64; ~3M parameters, the default of `minibert pretrain`), small (4, 512, 8, 2048, 8192, 128), base
        (12, 768, 12, 3072, 30522, 512: BERT-base), large (24, 1024, 16, 4096, 30522, 512). Descendants of mini
        (docs/descendants.md): roberta-mini, preln-mini, albert-mini, deberta-mini (a DebertaV2Config). An unknown
        name is a ValueError listing them."""
        if name in FAMILY_PRESETS:
            base, family = FAMILY_PRESETS[name]
            return cls.preset(base, **{**family, **overrides})
        if name not in PRESETS:
            raise ValueError(f"unknown config preset {name!r}; expected one of {', '.join(PRESET_NAMES)}")
        layers, hidden, heads, ffn, vocab, positions = PRESETS[name]
        values: dict[str, Any] = dict(num_hidden_layers=layers, hidden_size=hidden, num_attention_heads=heads,
                                      intermediate_size=ffn, vocab_size=vocab, max_position_embeddings=positions)
        values.update(overrides)
        if cls is BertConfig:
            cls = CONFIG_CLASSES.get(values.get("model_type"), cls)
        return cls(**values)

    # ---------------------------------------------------------------- config.json
    @classmethod
    def from_dict(cls, d: dict[str, Any], source: str = "config") -> "BertConfig":
        """A config from a dict with Hugging Face's field names (a parsed config.json, or a transformers config's
        `to_dict()`: `BertConfig.from_dict(hf_config.to_dict())`). Keys that are not fields (architectures,
        id2label, ...) are kept in `extra` and written back by to_dict. model_type "distilbert" gives a
        DistilBertConfig. Bad values are one ValueError that starts with `source` (the file's path)."""
        if cls is BertConfig and d.get("model_type") in CONFIG_CLASSES:  # same encoder, other or more fields
            return CONFIG_CLASSES[d["model_type"]].from_dict(d, source)
        if d.get("model_type", "bert") not in MODEL_TYPES:
            raise ValueError(f"{source}: model_type is {d.get('model_type')!r}, expected one of "
                             f"{', '.join(MODEL_TYPES)}")
        names = {f.name for f in dataclasses.fields(cls)} - {"extra"}
        known = {k: v for k, v in d.items() if k in names}
        extra = {k: v for k, v in d.items() if k not in names}
        for name in ("num_hidden_groups", "inner_group_num"):  # ALBERT's layer groups: minibert shares one layer
            if d.get("model_type") == "albert" and d.get(name, 1) != 1:
                raise ValueError(f"{source}: ALBERT {name} is {d[name]!r}; minibert supports 1 (one layer shared "
                                 f"by all layers, ALBERT's published models)")
        try:
            return cls(**known, extra=extra)
        except (TypeError, ValueError) as e:
            raise ValueError(f"{source}: {e}") from None

    @classmethod
    def from_json_file(cls, path: str | os.PathLike) -> "BertConfig":
        """Read a config.json (or the config.json in a folder): `BertConfig.from_pretrained(folder)`. A DistilBERT
        config.json gives a DistilBertConfig. For a run folder or "minilm", resolve it first
        (minibert.io.model_folder.resolve_model_folder), as the models' from_pretrained does."""
        path = Path(path)
        if path.is_dir():
            path = path / "config.json"
        if not path.exists():
            raise FileNotFoundError(f"{path}: no config.json found")
        try:
            d = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: not valid JSON ({e})") from None
        if not isinstance(d, dict):
            raise ValueError(f"{path}: expected a JSON object")
        return cls.from_dict(d, source=str(path))

    from_pretrained = from_json_file

    def to_dict(self) -> dict[str, Any]:
        """The config.json dict: every field by Hugging Face's name, plus the kept `extra` keys."""
        d = dict(self.extra)
        d.update({f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "extra"})
        if d["embedding_size"] is None and self.model_type == "albert":
            d["embedding_size"] = self.hidden_size  # AlbertConfig's own default (128) would be wrong
        elif d["embedding_size"] is None:  # BERT's config.json has no such key; keep ours identical to it
            del d["embedding_size"]
        d.setdefault("position_embedding_type", "absolute")
        return d

    def to_json_file(self, path: str | os.PathLike) -> None:
        """Write config.json atomically (temp file + rename)."""
        path = Path(path)
        if path.is_dir():
            path = path / "config.json"
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(tmp, path)

    save_pretrained = to_json_file


# ---------------------------------------------------------------------------------------------------- DistilBERT
# DistilBertConfig: a BertConfig that reads and writes Hugging Face's DistilBERT config.json.
#
# DistilBERT (Sanh et al. 2019) is BERT's post-LN encoder without token-type embeddings and without a pooler,
# so minibert runs it on the same encoder; only the config's field names differ:
#
#     DistilBERT config.json      minibert (BertConfig) field
#     dim                         hidden_size
#     n_layers                    num_hidden_layers
#     n_heads                     num_attention_heads
#     hidden_dim                  intermediate_size
#     dropout                     hidden_dropout_prob
#     attention_dropout           attention_probs_dropout_prob
#     activation                  hidden_act
#
# Hugging Face's DistilBERT hard-codes LayerNorm's eps at 1e-12 and has no dropout after the attention's output
# projection (`out_lin`); `attention_output_dropout = False` tells the encoder layer so.
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
    family_model_type: ClassVar[str] = "distilbert"  # BertConfig.from_dict gives this class for that model_type
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
