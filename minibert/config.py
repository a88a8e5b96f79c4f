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
from typing import Any

from minibert.layers.activations import ACTIVATIONS

SUPPORTED_ACTIVATIONS = tuple(ACTIVATIONS)  # gelu (exact erf), gelu_new / gelu_pytorch_tanh (tanh), relu

# name -> (num_hidden_layers, hidden_size, num_attention_heads, intermediate_size, vocab_size, max_position_embeddings)
PRESETS: dict[str, tuple[int, int, int, int, int, int]] = {
    "tiny": (2, 128, 2, 512, 8192, 64),
    "mini": (3, 192, 4, 768, 8192, 64),  # the Mini-BERT our users learn from (~3M parameters)
    "small": (4, 512, 8, 2048, 8192, 128),
    "base": (12, 768, 12, 3072, 30522, 512),
    "large": (24, 1024, 16, 4096, 30522, 512),
}


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
    # Keys of config.json that are not fields above (architectures, id2label, torch_dtype, ...): kept so that a
    # loaded config saves back without losing them.
    extra: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.validate()

    # ---------------------------------------------------------------- checks
    def validate(self) -> None:
        """Raise a one-line ValueError naming the field and what was expected."""
        for name in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                     "intermediate_size", "max_position_embeddings", "type_vocab_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"BertConfig.{name} must be a positive integer, got {value!r}")
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
        if not 0 <= self.pad_token_id < self.vocab_size:
            raise ValueError(f"BertConfig.pad_token_id {self.pad_token_id} is outside the vocabulary "
                             f"[0, {self.vocab_size})")

    @property
    def head_size(self) -> int:
        return self.hidden_size // self.num_attention_heads

    # ---------------------------------------------------------------- presets
    @classmethod
    def preset(cls, name: str, **overrides: Any) -> "BertConfig":
        if name not in PRESETS:
            raise ValueError(f"unknown config preset {name!r}; expected one of {', '.join(PRESETS)}")
        layers, hidden, heads, ffn, vocab, positions = PRESETS[name]
        values: dict[str, Any] = dict(num_hidden_layers=layers, hidden_size=hidden, num_attention_heads=heads,
                                      intermediate_size=ffn, vocab_size=vocab, max_position_embeddings=positions)
        values.update(overrides)
        return cls(**values)

    # ---------------------------------------------------------------- config.json
    @classmethod
    def from_dict(cls, d: dict[str, Any], source: str = "config") -> "BertConfig":
        if d.get("model_type") == "distilbert" and cls is BertConfig:  # same encoder, other field names
            from minibert.distilbert_config import DistilBertConfig
            return DistilBertConfig.from_dict(d, source)
        if d.get("model_type", "bert") != "bert":
            raise ValueError(f"{source}: model_type is {d.get('model_type')!r}, expected 'bert' or 'distilbert'")
        names = {f.name for f in dataclasses.fields(cls)} - {"extra"}
        known = {k: v for k, v in d.items() if k in names}
        extra = {k: v for k, v in d.items() if k not in names}
        try:
            return cls(**known, extra=extra)
        except (TypeError, ValueError) as e:
            raise ValueError(f"{source}: {e}") from None

    @classmethod
    def from_json_file(cls, path: str | os.PathLike) -> "BertConfig":
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
        d = dict(self.extra)
        d.update({f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "extra"})
        d["model_type"] = "bert"
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
