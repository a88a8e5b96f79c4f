"""Every setting of a pre-training run, in one dataclass saved as JSON in the run folder and every checkpoint.

`--resume` (in Python: `resume=` in the settings) reads them back, so a resumed run continues with exactly the
settings it started with. The command line and the Python API share these settings, so every message names a
setting both ways: "batch_size (--batch-size) must be a positive integer, got 0".
"""

from __future__ import annotations

import dataclasses
import numbers
import os
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from minibert.config import PRESET_NAMES, BertConfig
from minibert.data.examples import OBJECTIVES

OUTPUT_BIAS_INITS = ("zero", "unigram")
PACKINGS = ("sentences", "full")
# Options that only change what is printed or where files go: allowed to differ on --resume.
# Settings a resumed run may change: they do not change what it computes (recompute gives the same bits).
COSMETIC = ("quiet", "runs_dir", "name", "resume", "keep_checkpoints", "plot", "recompute")
OPTION_FLAGS = {"betas": "--beta2", "plot": "--no-plot"}  # settings whose command-line option is not --<name>


# What a model given as `init` decides for itself (its config.json and vocab.txt).
INIT_DECIDES = ("config", "tokenizer", "vocab_size")


def init_conflict(name: str, init: str) -> str:
    """The one line that refuses a setting `init` decides."""
    return (f"{option(name)} conflicts with {option('init')}: continued pre-training takes the model's config and "
            f"vocabulary from {init}")


def option(name: str) -> str:
    """How a message names a setting, for Python and for the command line: "batch_size (--batch-size)"."""
    return f"{name} ({OPTION_FLAGS.get(name, '--' + name.replace('_', '-'))})"


def shown(value) -> str:
    """A value as a message shows it: its repr, with its type when that is not obvious (3 (int), '1e-3' (str))."""
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, (str, numbers.Number)):
        return f"{value!r} ({type(value).__name__})"
    name = type(value).__name__
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


@dataclass
class PretrainSettings:
    # ---- data
    corpus: list[str] = field(default_factory=lambda: ["wiki"])  # files/folders (str or Path; one alone is fine)
    text_field: str = "text"
    tokenizer: str | None = None         # a folder with vocab.txt; None: train one on the corpus (cached)
    vocab_size: int = 8192               # of the tokenizer trained when none is given
    eval_fraction: float = 0.02          # of the documents held out (ptb keeps its own valid split)
    eval_examples: int = 512             # held-out sequences evaluated each time (fixed masks)
    # ---- model and objective
    init: str | None = None              # continued pre-training: start from this model (a run or a model folder
    #                                      with an MLM head), its config and its vocabulary (training/init_model.py)
    config: str | BertConfig = "mini"    # a preset name, a config.json path, or a BertConfig (vocab_size: the
    #                                      tokenizer's, as for a preset); settings.json records it
    objective: str = "mlm"               # "mlm" (RoBERTa full sentences), "mlm+nsp" (BERT), "mlm+sop" (ALBERT)
    dropout: float | None = 0.0          # hidden and attention dropout; None keeps the config's value
    seq_len: int | None = None           # None: min(128, max_position_embeddings)
    mask_prob: float = 0.4               # share of tokens to predict in training (held-out masks stay at 15%)
    mask_prob_end: float | None = None   # the masking rate falls linearly from mask_prob to this over the run
    whole_word_mask: bool = False
    packing: str = "sentences"           # mlm training sequences: "sentences" (whole ones) or "full" (cut to fill)
    group_by_length: bool = True         # batches of similar-length sequences: less padding (data/grouping.py)
    short_seq_prob: float = 0.1          # mlm+nsp/sop only: share of sequences aimed at a random shorter length
    generator_size: float = 0.25         # electra only: the generator's hidden size as a share of the model's
    # ---- optimisation
    batch_size: int = 16
    grad_accum: int = 1
    recompute: bool = False              # keep only each layer's input, run its forward again in the backward
    steps: int | None = None             # total optimizer steps; None: as many as fit in `minutes`
    minutes: float = 13.0                # training-time budget when `steps` is not given
    lr: float = 1e-3
    warmup: float = 0.05                 # warmup length as a fraction of the total steps
    weight_decay: float = 0.01
    betas: tuple[float, float] = (0.9, 0.999)  # BERT's: 1-2 points above RoBERTa's 0.98 here (docs/pretraining.md)
    eps: float = 1e-6
    clip: float = 1.0                    # global gradient-norm limit (0: no clipping)
    output_bias: str = "unigram"         # MLM output bias at init: "zero" (BERT) or "unigram" (log frequencies)
    seed: int = 0
    # ---- bookkeeping
    log_every: int = 10                  # steps per train line in metrics.jsonl (losses averaged over them)
    eval_every: int | None = None        # None: about 10 evaluations per run
    save_every: int | None = None        # None: about 4 checkpoints per run
    keep_checkpoints: int = 2            # older step-XXXXXX folders are deleted (0: keep all)
    runs_dir: str = "runs"
    name: str | None = None              # run folder name; None: <config>-<corpus>-<date>-<time>
    plot: bool = True
    quiet: bool = False
    resume: str | None = None            # a run folder: continue that run (its saved settings; see pretrain())

    # Settings that name files or folders: a Path (os.PathLike) is stored as its str (settings.json is JSON).
    PATH_FIELDS: ClassVar[tuple[str, ...]] = ("tokenizer", "runs_dir", "resume", "name", "init")
    # Settings that are numbers (ints allowed), checked to be numbers before their ranges are.
    NUMBER_FIELDS: ClassVar[tuple[str, ...]] = (
        "eval_fraction", "dropout", "mask_prob", "mask_prob_end", "short_seq_prob", "generator_size", "minutes",
        "lr", "warmup", "weight_decay", "eps", "clip")
    INT_FIELDS: ClassVar[tuple[str, ...]] = ("seed", "keep_checkpoints")  # (positive ones: validate's own lists)

    def __post_init__(self) -> None:
        self.normalise()

    def normalise(self) -> None:
        """Paths (os.PathLike) as str, one corpus path alone as a list of one, a tuple of them as a list: what
        settings.json can hold and --resume compares. Run on construction and again by validate() (for values
        set afterwards); anything else is left for validate() to refuse."""
        if isinstance(self.corpus, (str, os.PathLike)):
            self.corpus = [self.corpus]
        if isinstance(self.corpus, (list, tuple)):
            self.corpus = [os.fspath(c) if isinstance(c, os.PathLike) else c for c in self.corpus]
        for name in self.PATH_FIELDS + (() if isinstance(self.config, BertConfig) else ("config",)):
            value = getattr(self, name)
            if isinstance(value, os.PathLike):
                setattr(self, name, os.fspath(value))
        if isinstance(self.betas, list):
            self.betas = tuple(self.betas)
        for f in dataclasses.fields(self):  # NumPy numbers (rng.integers(...) as a seed) as Python ones (JSON)
            value = getattr(self, f.name)
            if isinstance(value, np.generic):
                setattr(self, f.name, value.item())

    def validate(self) -> None:
        """One clear ValueError (TypeError for a value of the wrong type) for any bad setting, before data
        preparation starts. Messages name the setting and its command-line option: "steps (--steps) ..."."""
        self.normalise()
        bad = ([self.corpus] if not isinstance(self.corpus, list) else
               [c for c in self.corpus if not (isinstance(c, str) and c)])
        if bad:  # (normalise has made every path a str: anything else is no path)
            raise TypeError(f"{option('corpus')} must be a list of file or folder paths (str or Path), or "
                            f"a built-in corpus name ('wiki', 'imdb', ...); got {shown(bad[0])}")
        if not self.corpus:
            raise ValueError(f"{option('corpus')} names no file: give files or folders, or a built-in corpus "
                             f"('wiki', 'imdb', ...)")
        for name in self.PATH_FIELDS + ("text_field",):
            value = getattr(self, name)
            if not isinstance(value, str) and (value is not None or name in ("runs_dir", "text_field")):
                raise TypeError(f"{option(name)} must be a str{' or Path' if name != 'text_field' else ''}, got "
                                f"{shown(value)}")
        for name in self.NUMBER_FIELDS:
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, numbers.Real)):
                raise TypeError(f"{option(name)} must be a number, got {shown(value)}")
        for name in self.INT_FIELDS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                raise TypeError(f"{option(name)} must be an integer, got {shown(value)}")
        positive = ("vocab_size", "eval_examples", "batch_size", "grad_accum", "log_every")
        for name in positive:
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{option(name)} must be a positive integer, got {value!r}")
        for name in ("steps", "eval_every", "save_every", "seq_len"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ValueError(f"{option(name)} must be a positive integer, got {value!r}")
        if self.steps is None and not self.minutes > 0:
            raise ValueError(f"{option('minutes')} must be positive, got {self.minutes!r}")
        if self.objective not in OBJECTIVES:
            raise ValueError(f"{option('objective')} must be one of {', '.join(OBJECTIVES)}, got {self.objective!r}")
        self.check_config()
        self.check_init()
        if not 0.0 < self.mask_prob < 1.0:
            raise ValueError(f"{option('mask_prob')} must be between 0 and 1, got {self.mask_prob}")
        if self.mask_prob_end is not None and not 0.0 < self.mask_prob_end < 1.0:
            raise ValueError(f"{option('mask_prob_end')} must be between 0 and 1, got {self.mask_prob_end}")
        if self.dropout is not None and not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"{option('dropout')} must be in [0, 1), got {self.dropout}")
        if not self.lr > 0:
            raise ValueError(f"{option('lr')} must be positive, got {self.lr}")
        if not 0.0 <= self.warmup < 1.0:
            raise ValueError(f"{option('warmup')} is a fraction of the steps, in [0, 1), got {self.warmup}")
        if not 0.0 < self.eval_fraction < 1.0:
            raise ValueError(f"{option('eval_fraction')} must be between 0 and 1, got {self.eval_fraction}")
        if not 0.0 <= self.short_seq_prob <= 1.0:
            raise ValueError(f"{option('short_seq_prob')} must be in [0, 1], got {self.short_seq_prob}")
        if self.packing not in PACKINGS:
            raise ValueError(f"{option('packing')} must be one of {', '.join(PACKINGS)}, got {self.packing!r}")
        if not 0 < self.generator_size <= 1:
            raise ValueError(f"{option('generator_size')} must be in (0, 1], got {self.generator_size!r}")
        if self.packing == "full" and self.objective not in ("mlm", "electra"):
            raise ValueError(f"{option('packing')} 'full' is for objective (--objective) mlm or electra (sentence "
                             f"pairs are built for NSP), got {self.objective!r}")
        if self.output_bias not in OUTPUT_BIAS_INITS:
            raise ValueError(f"{option('output_bias')} must be one of {', '.join(OUTPUT_BIAS_INITS)}, got "
                             f"{self.output_bias!r}")
        if not (isinstance(self.betas, tuple) and len(self.betas) == 2
                and all(isinstance(b, numbers.Real) and not isinstance(b, bool) for b in self.betas)):
            raise TypeError(f"{option('betas')} must be two numbers (beta1, beta2), got {shown(self.betas)}")
        if not all(0.0 <= b < 1.0 for b in self.betas):
            raise ValueError(f"{option('betas')} must be in [0, 1), got {self.betas}")
        if self.keep_checkpoints < 0:
            raise ValueError(f"{option('keep_checkpoints')} must be >= 0, got {self.keep_checkpoints}")
        for name in ("weight_decay", "clip"):  # (AdamW refuses a negative decay only once the ranks have started)
            if not getattr(self, name) >= 0:
                raise ValueError(f"{option(name)} must be >= 0, got {getattr(self, name)!r}")
        self.check_saveable()

    def check_config(self) -> None:
        """config names a preset or a config.json (read, with seq_len, by training.pretrain.check_before_data), or
        is a BertConfig."""
        if isinstance(self.config, BertConfig):
            return
        if not isinstance(self.config, str):
            raise TypeError(f"{option('config')} takes a preset name ({', '.join(PRESET_NAMES)}), a config.json path "
                            f"or a BertConfig; got {shown(self.config)}")
        if self.config not in PRESET_NAMES and not self.config.endswith(".json"):
            raise ValueError(f"{option('config')} must be one of {', '.join(PRESET_NAMES)} or a config.json file, got "
                             f"{self.config!r}")

    def check_init(self) -> None:
        """With init, the model, its config and its vocabulary come from that folder: a setting that would choose
        them too is refused (the command line refuses them even when given their default values)."""
        if self.init is None:
            return
        defaults = PretrainSettings()
        for name in INIT_DECIDES:
            if isinstance(getattr(self, name), BertConfig) or getattr(self, name) != getattr(defaults, name):
                raise ValueError(init_conflict(name, self.init))
        if self.objective == "electra":
            raise ValueError(f"{option('init')} continues a masked-LM model; {option('objective')} electra trains a "
                             f"generator and a discriminator from scratch: use mlm, mlm+nsp or mlm+sop")

    def check_saveable(self) -> None:
        """Every setting can be written to settings.json (JSON): refused now, not after the data is prepared."""
        import json
        for name, value in self.to_dict().items():
            try:
                json.dumps(value)
            except (TypeError, ValueError):
                raise TypeError(f"{option(name)} must be a plain value (str, number, list; it is saved in "
                                f"settings.json), got {shown(getattr(self, name))}") from None

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["betas"] = list(self.betas) if isinstance(self.betas, (list, tuple)) else self.betas
        if isinstance(self.config, BertConfig):  # recorded as its config.json fields
            d["config"] = self.config.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict, source: str = "settings") -> "PretrainSettings":
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ValueError(f"{source}: unknown settings {', '.join(unknown)} (written by a newer minibert?)")
        d = dict(d)
        d.setdefault("group_by_length", False)  # runs saved before the option existed were not grouped
        if "betas" in d:
            d["betas"] = tuple(d["betas"])
        if isinstance(d.get("config"), dict):  # a run given a BertConfig records its fields
            d["config"] = BertConfig.from_dict(d["config"], source=f"{source}: config")
        return cls(**d)

    def default_name(self, corpus_name: str) -> str:
        """The run folder's name when `name` is not given: <config>-<corpus>-<date>-<time>."""
        from minibert.training.run_dir import default_run_name, init_run_stem
        return default_run_name(self.config if self.init is None else init_run_stem(self.init), corpus_name)

    def describe_config(self) -> str:
        """The config as the start-up line names it: the preset or file, or a BertConfig's size."""
        if self.init is not None:
            return f"from {self.init}"
        if isinstance(self.config, BertConfig):
            c = self.config
            return f"{c.model_type} config ({c.num_hidden_layers} layers, hidden {c.hidden_size})"
        return str(self.config)

    def differences(self, other: "PretrainSettings") -> list[str]:
        """Names of the settings (other than cosmetic ones) whose values differ."""
        return [f.name for f in dataclasses.fields(self)
                if f.name not in COSMETIC and getattr(self, f.name) != getattr(other, f.name)]
