"""Training curves from a run folder's metrics.jsonl: loss, held-out accuracy, learning rate, tokens/s.
A run that has no accuracy to show (a hidden-state distillation: no masked-token prediction) gets its separate
losses (cos_loss, pool_loss, ...) in the accuracy panel's place.

metrics.jsonl holds one JSON object per line, written by `minibert pretrain` (and `distill`), e.g.

    {"step": 100, "split": "train", "loss": 7.12, "lr": 0.0005, "tokens_per_s": 51234, "elapsed": 12.3}
    {"step": 100, "split": "eval", "loss": 6.98, "mlm_acc": 0.081, "ppl": 1075.2, "nsp_acc": 0.55}

Every key is optional: a panel with nothing to show says so. A line that is not valid JSON (say the last one,
cut short by a crash) is skipped and counted. Files of hidden-state distillations written before their logs left
the masked-LM numbers out (every held-out line with `masked_tokens` 0, so `mlm_loss` 0, `ppl` 1, `mlm_acc` 0)
are read without those numbers.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

HELD_OUT_SPLITS = ("eval", "valid", "validation", "val", "dev", "test", "heldout", "held_out")
# Other names a writer might use for the same quantity.
ALIASES = {"learning_rate": "lr", "tokens_per_sec": "tokens_per_s", "tok_per_s": "tokens_per_s",
           "tokens/s": "tokens_per_s", "iter": "step", "global_step": "step", "acc": "accuracy"}
ACCURACY_KEYS = ("mlm_acc", "nsp_acc", "accuracy", "f1")
MLM_KEYS = ("mlm_loss", "ppl", "mlm_acc", "masked_tokens")  # meaningless in a run that predicted no masked token


@dataclass
class Metrics:
    path: Path
    train: list[dict] = field(default_factory=list)
    held_out: list[dict] = field(default_factory=list)
    skipped_lines: list[int] = field(default_factory=list)  # 1-based line numbers that were not JSON objects

    def series(self, split: str, key: str) -> tuple[list[float], list[float]]:
        """(steps, values) of one key, finite numbers only."""
        rows = self.train if split == "train" else self.held_out
        xs, ys = [], []
        for r in rows:
            v = r.get(key)
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
                xs.append(r["step"])
                ys.append(float(v))
        return xs, ys


def find_metrics_file(run: str | Path) -> Path:
    """RUN_DIR/metrics.jsonl, or the file itself when a .jsonl file is given."""
    run = Path(run)
    if run.is_file():
        return run
    if not run.exists():
        raise FileNotFoundError(f"{run}: no such run folder")
    path = run / "metrics.jsonl"
    if not path.exists():
        found = sorted(p.name for p in run.glob("*.jsonl"))
        hint = f" (it has {', '.join(found)})" if found else ""
        above = next((p for p in run.resolve().parents[:3] if (p / "metrics.jsonl").is_file()), None)
        if above is not None:  # a checkpoint folder inside a run
            raise FileNotFoundError(f"{run}: no metrics.jsonl in this folder; the run folder {above} has one: "
                                    f"minibert plot {above}")
        if (run / "metrics.json").is_file():
            raise FileNotFoundError(f"{run}: no metrics.jsonl in this folder, only metrics.json (the summary "
                                    f"'minibert finetune' writes); minibert plot draws the step-by-step "
                                    f"metrics.jsonl of 'minibert pretrain' and 'minibert distill' runs")
        raise FileNotFoundError(f"{run}: no metrics.jsonl in this folder{hint}; a run folder gets one when "
                                f"training logs its first step")
    return path


def read_metrics(run: str | Path) -> Metrics:
    path = find_metrics_file(run)
    metrics = Metrics(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not a metrics.jsonl file: not UTF-8 text ({e.reason} at byte {e.start}); "
                         f"expected one JSON object per line") from None
    for line_no, line in enumerate(text.split("\n"), start=1):  # \n only: JSON strings may hold other breaks
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            metrics.skipped_lines.append(line_no)
            continue
        if not isinstance(record, dict):
            metrics.skipped_lines.append(line_no)
            continue
        record = {ALIASES.get(k, k): v for k, v in record.items()}
        split = str(record.get("split", "train")).lower()
        rows = metrics.held_out if split in HELD_OUT_SPLITS else metrics.train
        if not isinstance(record.get("step"), (int, float)):
            record["step"] = len(rows)  # no step logged: number the records
        rows.append(record)
    if not metrics.train and not metrics.held_out:
        raise ValueError(f"{path}: no metric records (expected one JSON object per line, e.g. "
                         f'{{"step": 1, "split": "train", "loss": 7.1}})')
    counted = [r["masked_tokens"] for r in metrics.held_out if "masked_tokens" in r]
    if counted and not any(counted):  # no masked token ever evaluated: no MLM (an older hidden-state distillation)
        for r in metrics.train + metrics.held_out:
            for key in MLM_KEYS:
                r.pop(key, None)
    return metrics


def _has(metrics: Metrics, key: str) -> bool:
    return bool(metrics.series("eval", key)[0] or metrics.series("train", key)[0])


def part_losses(metrics: Metrics) -> list[str]:
    """The losses logged besides the total `loss` (mlm_loss, nsp_loss; a distillation's kd_loss, cos_loss,
    mse_loss, pool_loss), sorted; a part always equal to the total (pre-training with MLM only) is left out."""
    names = sorted({k for r in metrics.train + metrics.held_out for k in r if k.endswith("_loss") and k != "loss"})
    same = [k for k in names if all(metrics.series(split, k) == metrics.series(split, "loss")
                                    for split in ("train", "eval"))]
    return [k for k in names if k not in same and _has(metrics, k)]


def second_panel(metrics: Metrics) -> tuple[str, list[str]]:
    """(title, keys) of the second panel: the accuracies logged, or, with none (a hidden-state distillation),
    the separate losses."""
    accuracies = [k for k in ACCURACY_KEYS if _has(metrics, k)]
    parts = [] if accuracies else part_losses(metrics)  # (a pass over every logged record: once)
    return ("losses", parts) if parts else ("accuracy", accuracies)


def _smooth(values: list[float], window: int) -> list[float]:
    """Trailing moving average, so a noisy training loss shows its trend."""
    out, total = [], 0.0
    for i, v in enumerate(values):
        total += v
        if i >= window:
            total -= values[i - window]
        out.append(total / min(i + 1, window))
    return out


def plot_training_curves(metrics: Metrics, out_path: str | Path, title: str | None = None) -> Path:
    """Draw four panels (loss, held-out accuracy or, with none, the separate losses, learning rate, tokens/s)
    into a PNG."""
    from minibert.viz.mpl import new_figure, save_figure
    fig = new_figure((11, 7.5))
    axes = fig.subplots(2, 2)
    ax_loss, ax_acc, ax_lr, ax_tps = axes.ravel()

    def empty(ax, what):
        ax.text(0.5, 0.5, f"no {what} in metrics.jsonl", ha="center", va="center", transform=ax.transAxes,
                color="0.4")

    # 1. loss: every training step faint, its moving average bold, held-out loss as points
    xs, ys = metrics.series("train", "loss")
    if xs:
        ax_loss.plot(xs, ys, color="tab:blue", alpha=0.25, linewidth=0.8)
        window = max(1, len(ys) // 50)
        ax_loss.plot(xs, _smooth(ys, window), color="tab:blue",
                     label="train" + (f" (mean of {window})" if window > 1 else ""))
    ex, ey = metrics.series("eval", "loss")
    if ex:
        ax_loss.plot(ex, ey, "o-", color="tab:orange", markersize=4, label="held-out")
    if xs or ex:
        ax_loss.legend()
    else:
        empty(ax_loss, "loss")
    ax_loss.set_title("loss")

    # 2. accuracy on held-out data (training accuracy dashed, when logged); no accuracy: the separate losses
    drawn = False
    panel_title, keys = second_panel(metrics)
    for key, color in zip(keys, ("tab:green", "tab:purple", "tab:red", "tab:brown", "tab:olive", "tab:pink")):
        ex, ey = metrics.series("eval", key)
        if ex:
            ax_acc.plot(ex, ey, "o-", color=color, markersize=4, label=f"held-out {key}")
            drawn = True
        tx, ty = metrics.series("train", key)
        if tx:
            ax_acc.plot(tx, ty, "--", color=color, alpha=0.5, label=f"train {key}")
            drawn = True
    if drawn:
        ax_acc.legend()
    else:
        empty(ax_acc, "accuracy (mlm_acc, nsp_acc)")
    ax_acc.set_title(panel_title if panel_title == "accuracy" else "losses by part (lower is better)")

    # 3. learning rate (warm-up then decay)
    xs, ys = metrics.series("train", "lr")
    if xs:
        ax_lr.plot(xs, ys, color="tab:gray")
        ax_lr.ticklabel_format(axis="y", style="sci", scilimits=(-3, 3))
    else:
        empty(ax_lr, "learning rate (lr)")
    ax_lr.set_title("learning rate")

    # 4. throughput
    xs, ys = metrics.series("train", "tokens_per_s")
    if xs:
        ax_tps.plot(xs, ys, color="tab:cyan")
        ax_tps.set_ylim(0, max(ys) * 1.1)
    else:
        empty(ax_tps, "throughput (tokens_per_s)")
    ax_tps.set_title("tokens per second")

    for ax in axes.ravel():
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
    fig.suptitle(title or str(metrics.path.parent))
    save_figure(fig, out_path)
    return Path(out_path)


def summary(metrics: Metrics) -> str:
    """A few lines for the terminal: how many records, last training loss, best held-out numbers."""
    lines = [f"{metrics.path}: {len(metrics.train)} training and {len(metrics.held_out)} held-out records"]
    if metrics.skipped_lines:
        shown = ", ".join(map(str, metrics.skipped_lines[:5])) + (" ..." if len(metrics.skipped_lines) > 5 else "")
        lines.append(f"  skipped {len(metrics.skipped_lines)} line(s) that are not JSON objects: {shown}")
    xs, ys = metrics.series("train", "loss")
    if ys:
        lines.append(f"  training loss: {ys[0]:.4f} at step {xs[0]:g} -> {ys[-1]:.4f} at step {xs[-1]:g}")
    ex, ey = metrics.series("eval", "loss")
    if ey:
        best = min(range(len(ey)), key=ey.__getitem__)
        lines.append(f"  held-out loss: best {ey[best]:.4f} at step {ex[best]:g}, last {ey[-1]:.4f}")
    for key in part_losses(metrics):
        ex, ey = metrics.series("eval", key)
        if ey:
            best = min(range(len(ey)), key=ey.__getitem__)
            lines.append(f"  held-out {key}: best {ey[best]:.4f} at step {ex[best]:g}, last {ey[-1]:.4f}")
    for key in ACCURACY_KEYS:
        ex, ey = metrics.series("eval", key)
        if ey:
            best = max(range(len(ey)), key=ey.__getitem__)
            lines.append(f"  held-out {key}: best {ey[best]:.4f} at step {ex[best]:g}, last {ey[-1]:.4f}")
    return "\n".join(lines)
