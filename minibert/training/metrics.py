"""metrics.jsonl: one JSON object per line, appended as training goes (the schema is in docs/pretraining.md).

    {"step": 100, "split": "train", "loss": 6.1, "mlm_loss": 6.1, "mlm_acc": 0.08, "lr": 0.001, ...}
    {"step": 100, "split": "eval", "loss": 5.9, "mlm_loss": 5.9, "ppl": 365.0, "mlm_acc": 0.1, ...}

Floats are written with Python's repr, which reads back to the identical float: two runs can be compared
to the last bit from their files.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from minibert.io.atomic import atomic_write_text


def _clean(value):
    """JSON has no NaN/inf: write them as strings so the file stays standard JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


class MetricsLog:
    def __init__(self, path: str | Path):
        self.path = Path(path)

    def append(self, record: dict) -> None:
        line = json.dumps({k: _clean(v) for k, v in record.items()}, allow_nan=False)
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(line + "\n")

    def truncate_after(self, step: int) -> None:
        """Drop the lines of steps after `step` (written after the checkpoint a run resumes from)."""
        if not self.path.exists():
            return
        kept = [r for r in read_metrics(self.path) if r.get("step", 0) <= step]
        atomic_write_text(self.path, "".join(json.dumps(r) + "\n" for r in kept))


def read_metrics(path: str | Path) -> list[dict]:
    """Every record of a metrics.jsonl; a half-written last line (a crash mid-write) is skipped."""
    records = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.strip():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return records


class Window:
    """Sums over the steps between two train lines; its state goes into checkpoints for exact resume."""

    FIELDS = ("steps", "loss", "mlm_loss", "nsp_loss", "masked", "correct", "pairs", "nsp_correct", "tokens",
              "seconds", "rtd_loss", "rtd_correct", "rtd_tokens")
    COUNTS = ("steps", "masked", "correct", "pairs", "nsp_correct", "tokens", "rtd_correct", "rtd_tokens")

    def __init__(self):
        self.reset()

    def reset(self) -> None:
        for name in self.FIELDS:
            setattr(self, name, 0 if name in self.COUNTS else 0.0)
        self.parts = {}  # losses a model reports besides its total (distillation: kd_loss, cos_loss, ...)

    def record(self, lr: float, grad_norm: float) -> dict:
        r = {"loss": self.loss / self.steps, "mlm_loss": self.mlm_loss / self.steps,
             "mlm_acc": self.correct / max(1, self.masked)}
        if self.pairs:
            r["nsp_loss"] = self.nsp_loss / self.steps
            r["nsp_acc"] = self.nsp_correct / self.pairs
        if self.rtd_tokens:  # ELECTRA: the discriminator's replaced-token detection, over non-padding tokens
            r["rtd_loss"] = self.rtd_loss / self.steps
            r["rtd_acc"] = self.rtd_correct / self.rtd_tokens
        r.update({name: value / self.steps for name, value in self.parts.items()})
        r.update(lr=lr, grad_norm=grad_norm, tokens_per_s=self.tokens / max(self.seconds, 1e-9))
        return r

    def state_dict(self) -> dict:
        return {**{name: getattr(self, name) for name in self.FIELDS}, "parts": dict(self.parts)}

    def load_state_dict(self, state: dict) -> None:
        for name in self.FIELDS:
            setattr(self, name, state.get(name, 0))  # .get: checkpoints from before the rtd fields
        self.parts = dict(state.get("parts", {}))
