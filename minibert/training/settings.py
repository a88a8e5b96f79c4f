"""Every setting of a pre-training run, in one dataclass saved as JSON in the run folder and every checkpoint.

`--resume` reads them back, so a resumed run continues with exactly the settings it started with.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from minibert.config import PRESET_NAMES
from minibert.data.examples import OBJECTIVES

OUTPUT_BIAS_INITS = ("zero", "unigram")
PACKINGS = ("sentences", "full")
# Options that only change what is printed or where files go: allowed to differ on --resume.
# Settings a resumed run may change: they do not change what it computes (recompute gives the same bits).
COSMETIC = ("quiet", "runs_dir", "name", "resume", "keep_checkpoints", "plot", "recompute")


@dataclass
class PretrainSettings:
    # ---- data
    corpus: list[str] = field(default_factory=lambda: ["wiki"])
    text_field: str = "text"
    tokenizer: str | None = None         # a folder with vocab.txt; None: train one on the corpus (cached)
    vocab_size: int = 8192               # of the tokenizer trained when none is given
    eval_fraction: float = 0.02          # of the documents held out (ptb keeps its own valid split)
    eval_examples: int = 512             # held-out sequences evaluated each time (fixed masks)
    # ---- model and objective
    config: str = "mini"                 # a preset name or a config.json path
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
    resume: str | None = None

    def validate(self) -> None:
        """One clear ValueError for any bad setting, before data preparation starts."""
        positive = ("vocab_size", "eval_examples", "batch_size", "grad_accum", "log_every")
        for name in positive:
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"--{name.replace('_', '-')} must be a positive integer, got {value!r}")
        for name in ("steps", "eval_every", "save_every", "seq_len"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ValueError(f"--{name.replace('_', '-')} must be a positive integer, got {value!r}")
        if self.steps is None and not self.minutes > 0:
            raise ValueError(f"--minutes must be positive, got {self.minutes!r}")
        if self.objective not in OBJECTIVES:
            raise ValueError(f"--objective must be one of {', '.join(OBJECTIVES)}, got {self.objective!r}")
        self.check_config()
        if not 0.0 < self.mask_prob < 1.0:
            raise ValueError(f"--mask-prob must be between 0 and 1, got {self.mask_prob}")
        if self.mask_prob_end is not None and not 0.0 < self.mask_prob_end < 1.0:
            raise ValueError(f"--mask-prob-end must be between 0 and 1, got {self.mask_prob_end}")
        if self.dropout is not None and not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"--dropout must be in [0, 1), got {self.dropout}")
        if not self.lr > 0:
            raise ValueError(f"--lr must be positive, got {self.lr}")
        if not 0.0 <= self.warmup < 1.0:
            raise ValueError(f"--warmup is a fraction of the steps, in [0, 1), got {self.warmup}")
        if not 0.0 < self.eval_fraction < 1.0:
            raise ValueError(f"--eval-fraction must be between 0 and 1, got {self.eval_fraction}")
        if not 0.0 <= self.short_seq_prob <= 1.0:
            raise ValueError(f"--short-seq-prob must be in [0, 1], got {self.short_seq_prob}")
        if self.packing not in PACKINGS:
            raise ValueError(f"--packing must be one of {', '.join(PACKINGS)}, got {self.packing!r}")
        if not 0 < self.generator_size <= 1:
            raise ValueError(f"--generator-size must be in (0, 1], got {self.generator_size!r}")
        if self.packing == "full" and self.objective not in ("mlm", "electra"):
            raise ValueError(f"--packing full is for --objective mlm or electra (sentence pairs are built for NSP), got "
                             f"{self.objective!r}")
        if self.output_bias not in OUTPUT_BIAS_INITS:
            raise ValueError(f"--output-bias must be one of {', '.join(OUTPUT_BIAS_INITS)}, got {self.output_bias!r}")
        if not (len(self.betas) == 2 and all(0.0 <= b < 1.0 for b in self.betas)):
            raise ValueError(f"--beta1/--beta2 must be in [0, 1), got {self.betas}")
        if self.keep_checkpoints < 0:
            raise ValueError(f"--keep-checkpoints must be >= 0, got {self.keep_checkpoints}")
        for name in ("weight_decay", "clip"):  # (AdamW refuses a negative decay only once the ranks have started)
            if not getattr(self, name) >= 0:
                raise ValueError(f"--{name.replace('_', '-')} must be >= 0, got {getattr(self, name)!r}")

    def check_config(self) -> None:
        """--config names a preset or a config.json (read, with --seq-len, by training.pretrain.check_before_data)."""
        if self.config not in PRESET_NAMES and not self.config.endswith(".json"):
            raise ValueError(f"--config must be one of {', '.join(PRESET_NAMES)} or a config.json file, got "
                             f"{self.config!r}")

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["betas"] = list(self.betas)
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
        return cls(**d)

    def differences(self, other: "PretrainSettings") -> list[str]:
        """Names of the settings (other than cosmetic ones) whose values differ."""
        return [f.name for f in dataclasses.fields(self)
                if f.name not in COSMETIC and getattr(self, f.name) != getattr(other, f.name)]
