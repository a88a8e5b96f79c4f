"""`minibert plot RUN_DIR`: training curves (loss, held-out accuracy or a distillation's separate losses, learning
rate, tokens/s) as a PNG."""

from __future__ import annotations

from pathlib import Path


def add_arguments(parser):
    parser.description = (
        "Draw the training curves of a run folder from its metrics.jsonl (written during training): loss "
        "(train and held-out), held-out accuracy (a run without one, such as a hidden-state distillation: its "
        "separate losses), learning rate and tokens per second. Saves RUN_DIR/training.png "
        "unless --out is given. Needs matplotlib (pip install 'minibert[plot]').")
    parser.add_argument("run_dir", metavar="RUN_DIR", help="a run folder holding metrics.jsonl (or the file itself)")
    parser.add_argument("--out", default=None, help="where to write the PNG (default RUN_DIR/training.png)")
    parser.add_argument("--title", default=None, help="figure title (default: the run folder)")


def run(args) -> int:
    from minibert.io.atomic import check_output_file
    from minibert.viz.curves import plot_training_curves, read_metrics, summary
    metrics = read_metrics(args.run_dir)  # clear errors for a missing folder / file / empty file, before drawing
    out = Path(args.out) if args.out else metrics.path.parent / "training.png"
    if out.suffix.lower() != ".png":
        raise ValueError(f"--out {out}: expected a .png file name")
    check_output_file(out, "--out")
    plot_training_curves(metrics, out, title=args.title)
    print(summary(metrics))
    print(f"wrote {out}")
    return 0
