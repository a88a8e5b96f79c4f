"""minibert bench: fine-tune a model on every built-in task with the tasks' defaults; print and save the table of
its test scores beside the baselines' and BERT-base's published figures (finetune/bench.py does the work)."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from minibert.finetune.tasks import TASKS

    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.description = (
        "Fine-tune --model on each built-in task (minibert finetune --task NAME with the task's defaults, which fit\n"
        "about 15 minutes of MiniLM on 2 cores each, and its baselines), then print and save the table:\n"
        "bench.md, bench.json and bench.png in --out, with BERT-base's published figures as a reference row.\n"
        "A finished task (its result .json in --out) is not run again: an interrupted bench resumes.")
    parser.epilog = """examples:
  minibert bench --model minilm --out runs/bench
  minibert bench --model minilm --tasks conll2003 stsb --seeds 0 1 2 --out runs/bench
  minibert bench --model minilm --tasks imdb --max-train-examples 500 --out runs/bench-500    (few labels)
  minibert bench --model runs/mini-wiki --untrained --out runs/bench-untrained    (what pre-training is worth)
  minibert bench --model minilm --quick --out runs/bench-smoke    (a smoke run: a few minutes)
  minibert bench --compare untrained=runs/bench-untrained mini=runs/bench-mini MiniLM=runs/bench
                 (one table of several benches already run: a row per model; trains nothing)
See docs/tasks.md."""
    parser.add_argument("--model", default="minilm", metavar="DIR",
                        help="checkpoint folder, pre-training run folder, or 'minilm' (the built-in all-MiniLM-L6-v2; "
                             "default)")
    parser.add_argument("--tasks", nargs="+", choices=tuple(TASKS), default=list(TASKS), metavar="TASK",
                        help=f"the tasks to run (default: all: {', '.join(TASKS)})")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0], metavar="N",
                        help="one run per task and seed; the table gives their mean and spread (default: 0)")
    parser.add_argument("--out", default="runs/bench", metavar="DIR",
                        help="where each run's folder, its result .json and the table go (default runs/bench)")
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run: 48 training examples, 1 epoch, eval and test on 24, every task")
    parser.add_argument("--untrained", action="store_true",
                        help="bench --model's untrained twin instead: its config and tokenizer with freshly "
                             "initialised weights (seed 0, saved in OUT/untrained-<model's name>/); beside the "
                             "model's own bench, it shows what the pre-training is worth")
    parser.add_argument("--max-train-examples", type=int, metavar="N",
                        help="train every task on N examples (a seeded draw; the baselines on the same ones): how "
                             "the model does with few labels. N replaces each task's own training-set size (imdb's "
                             "1,600 too; a task with fewer trains on all it has). Default: each task's own")
    parser.add_argument("--no-baselines", action="store_true", help="skip the baselines (they need scikit-learn)")
    parser.add_argument("--procs", default=None, metavar="N",
                        help="processes of each fine-tuning run, as minibert finetune's --procs (auto: 2 on a "
                             "machine with 2 or more cores, each run then in a process of its own; 1: every run in "
                             "this process) [auto]")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.add_argument("--compare", nargs="+", metavar="[NAME=]DIR",
                        help="print one table of benches already run (their --out folders or bench.json files): a "
                             "row per model, a column per task, the baselines and BERT-base's published figures; "
                             "trains nothing")


def _finetune_args(args, name: str, seed: int, folder, quick: bool, procs: int) -> list[str]:
    from minibert.finetune.bench import QUICK

    argv = ["--task", name, "--model", str(args.model_dir), "--seed", str(seed), "--out", str(folder), "--overwrite",
            "--procs", str(procs)]
    if not args.no_baselines:
        argv.append("--baseline")
    if args.no_progress:
        argv.append("--no-progress")
    if args.max_train_examples is not None:
        argv += ["--max-train-examples", str(args.max_train_examples)]
    if quick:
        for option, value in QUICK.items():
            argv += [f"--{option.replace('_', '-')}", str(value)]
    return argv


def run(args) -> int:
    import json
    import subprocess
    import sys
    from pathlib import Path

    if args.compare:
        given = [flag for flag, value in (("--untrained", args.untrained), ("--quick", args.quick),
                                          ("--max-train-examples", args.max_train_examples is not None))
                 if value]
        if given:
            raise ValueError(f"--compare trains nothing: it does not go with {', '.join(given)}")
        from minibert.finetune.bench import compare
        print(compare(args.compare), end="")
        return 0

    from minibert.commands import finetune
    from minibert.finetune.bench import run_bench, save_bench
    from minibert.finetune.model_source import resolve_model
    from minibert.finetune.tasks import TASKS

    if min(args.seeds) < 0:
        raise ValueError(f"--seeds must be non-negative integers, got {min(args.seeds)}")
    if args.max_train_examples is not None and args.quick:
        raise ValueError("--max-train-examples does not go with --quick (which trains on 48)")
    if args.max_train_examples is not None and args.max_train_examples < 1:
        raise ValueError(f"--max-train-examples must be at least 1, got {args.max_train_examples}")
    # every check before the first run: the model folder, each task's data, scikit-learn for the baselines
    resolve_model(args.model)
    for name in args.tasks:
        TASKS[name].check_data()
    if not args.no_baselines:
        from minibert.finetune.baseline import _import_sklearn
        _import_sklearn()

    from minibert.training.procs import resolve_procs
    procs = resolve_procs(args.procs, 16, None)  # (16: every task's batch divides by it)
    out = Path(args.out)
    args.model_dir, label = args.model, args.model
    if args.untrained:
        from minibert.finetune.untrained import untrained_copy
        twin = out / f"untrained-{Path(args.model).resolve().name}"
        args.model_dir, label = untrained_copy(args.model, twin), f"{args.model}, untrained"

    def run_finetune(name, seed, folder, quick):
        argv = _finetune_args(args, name, seed, folder, quick, procs)
        if procs > 1:  # the ranks of --procs replace their process: a process of its own
            code = subprocess.run([sys.executable, "-m", "minibert", "finetune", *argv]).returncode
        else:
            parser = argparse.ArgumentParser(prog="minibert finetune")
            finetune.add_arguments(parser)
            fargs = parser.parse_args(argv)
            fargs.argv = ["finetune", *argv]
            code = finetune.run(fargs)
        if code:
            raise ValueError(f"the run of task {name} (seed {seed}) failed with status {code}; the tasks "
                               f"finished before it are kept in {args.out}/")
        return json.loads((Path(folder) / "metrics.json").read_text(encoding="utf-8"))

    bench = run_bench(label, args.tasks, out, args.seeds, args.quick, run_finetune,
                      progress=not args.no_progress, max_train_examples=args.max_train_examples)
    save_bench(bench, out)
    return 0
