"""What every kind of fine-tuning run (sequence, tokens, qa) does the same way around its own data and head:
check the model folder and settings, load the tokenizer, hold out an eval split, log, and write metrics.json.
"""

from __future__ import annotations

import json
import sys
import time
import warnings

import numpy as np

DEFAULT_SELECT = {"sequence": "accuracy", "tokens": "f1", "qa": "f1"}
TASK_METRICS = {"sequence": ("accuracy", "macro_f1"), "tokens": ("f1", "token_accuracy"), "qa": ("f1", "exact_match")}


def setup_training(args, task_type):
    """Every model-side check of a fine-tuning run, before anything is loaded: the model folder, --max-length,
    the training settings, --dropout and --out. Returns (checkpoint, tokenizer folder, config, settings, out)."""
    from minibert.commands.finetune import DEFAULT_MAX_LENGTH, _out_dir
    from minibert.config import BertConfig
    from minibert.finetune.model_source import resolve_model
    from minibert.finetune.train import Settings

    select = args.select_metric or DEFAULT_SELECT[task_type]
    if select not in TASK_METRICS[task_type]:
        raise ValueError(f"--select-metric {select} does not apply to --task-type {task_type}; expected one of "
                         f"{', '.join(TASK_METRICS[task_type])}")
    checkpoint, tokenizer_dir = resolve_model(args.model)
    config = BertConfig.from_json_file(checkpoint)
    max_length = args.max_length
    if max_length is None:
        max_length = min(DEFAULT_MAX_LENGTH if task_type != "qa" else 384, config.max_tokens)
    elif max_length > config.max_tokens:
        raise ValueError(f"--max-length {max_length} is longer than the model's max_position_embeddings "
                         f"({config.max_tokens}, {checkpoint / 'config.json'})")
    settings = Settings(epochs=args.epochs, lr=args.lr, batch_size=args.batch_size, max_length=max_length,
                        warmup_ratio=args.warmup_ratio, weight_decay=args.weight_decay,
                        max_grad_norm=args.max_grad_norm, seed=args.seed, select_metric=select,
                        group_by_length=not args.no_group_by_length, progress=not args.no_progress)
    settings.validate()
    if args.dropout is not None and not 0.0 <= args.dropout < 1.0:
        raise ValueError(f"--dropout must be in [0, 1), got {args.dropout}")
    return checkpoint, tokenizer_dir, config, settings, _out_dir(args)


REPORTS = ("metrics.json", "confusion_matrix.png", "baseline_metrics.json")  # what runs write beside the model


def best_model_saver(args, out, tokenizer, comm):
    """fit's `on_best` (rank 0 saves the best epoch's model in --out, and remembers the epoch for the message of an
    interrupted run). With --overwrite, the previous run's reports are removed first: this run may not write its
    own (interrupted, no matplotlib, no --baseline-only), and --out must not pair its model with older numbers."""
    from minibert.finetune.loading import save_classifier

    if args.overwrite and comm.is_root:
        for name in REPORTS:
            (out / name).unlink(missing_ok=True)

    def on_best(model, epoch, metrics):
        save_classifier(model, tokenizer, out)
        args.best_saved = (epoch, out)
    return on_best


def load_checked_tokenizer(tokenizer_dir, config, checkpoint):
    from minibert.finetune.loading import load_tokenizer

    tokenizer = load_tokenizer(tokenizer_dir)
    if tokenizer.vocab_size != config.vocab_size:
        raise ValueError(f"{tokenizer_dir}: the tokenizer has {tokenizer.vocab_size} tokens but "
                         f"{checkpoint / 'config.json'} says vocab_size={config.vocab_size}")
    return tokenizer


def apply_dropout(model, dropout):
    """--dropout for the body and the head (saved in config.json too, as the model was trained)."""
    if dropout is None:
        return
    model.config.hidden_dropout_prob = model.config.attention_probs_dropout_prob = dropout
    if hasattr(model, "classifier_dropout"):
        model.config.extra["classifier_dropout"] = model.classifier_dropout = dropout


def make_log(args):
    if getattr(args, "silent_rank", False):  # a rank other than 0 of --procs N: rank 0 speaks for the job
        return lambda message: None

    def log(message):  # progress and notes go to stderr when stdout carries the JSON
        print(message, file=sys.stderr if args.json else sys.stdout, flush=True)
    return log


def check_run(args, prepare, task_type) -> None:
    """Every check of a fine-tuning run that `finetune_on_ranks` does before its ranks start: the data
    (`prepare(args, log)`), the model folder, settings and --out, the tokenizer, and scikit-learn for --baseline."""
    prepare(args, lambda message: None)
    checkpoint, tokenizer_dir, config, _, _ = setup_training(args, task_type)
    load_checked_tokenizer(tokenizer_dir, config, checkpoint)
    if getattr(args, "baseline", False):  # (text classification only: the other kinds refuse it in `prepare`)
        from minibert.finetune.baseline import _import_sklearn
        _import_sklearn()


def finetune_on_ranks(args, task, prepare, task_type) -> int:
    """Run `task(args, comm)` in this process, or on the ranks of `--procs N` (training/ranks.py): the command's
    process starts ranks 1..N-1 of the same command and becomes rank 0. Before any rank starts, `check_run(args,
    prepare, task_type)` runs every check of the run here, so that bad input is one line from one process. Ranks
    other than 0 train silently (no log, no progress bars) and write nothing; an error on any rank ends every
    rank, and SIGTERM ends the run as Ctrl-C does (the best epoch so far is already saved)."""
    from minibert.finetune.train import TrainingDiverged
    from minibert.training.distributed import check_divisible
    from minibert.training.ranks import not_yet_a_rank, run_on_ranks, start_ranks

    if not_yet_a_rank():
        single = "--baseline-only trains no BERT" if getattr(args, "baseline_only", False) else None
        start_ranks(args, args.batch_size, lambda: check_run(args, prepare, task_type), single)

    def body(comm) -> int:
        if comm.size > 1:
            check_divisible(args.batch_size, comm.size)  # (mpiexec: the number of ranks is known only here)
            if not comm.is_root:
                args.silent_rank, args.no_progress = True, True
                warnings.simplefilter("ignore")  # rank 0 shows what the ranks have in common
        try:
            return task(args, comm)
        except TrainingDiverged as e:  # every rank at the same step: rank 0 says it once
            if comm.is_root:
                print(f"minibert finetune: error: {e}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:  # (Ctrl-C, SIGTERM) metrics.json is written only at the end
            saved = getattr(args, "best_saved", None)
            if comm.is_root and saved:
                print(f"minibert finetune: the best model so far (epoch {saved[0]}) is saved in {saved[1]}/; no "
                      f"metrics.json, as the run did not finish", file=sys.stderr)
            raise
    return run_on_ranks("minibert finetune", body)


def splits_of_this_rank(comm, train, eval_, test) -> dict:
    """The data sets this rank tokenizes, by name ("train", "eval", "test"; those given). Only rank 0 evaluates and
    tests (finetune/train.py's `fit`), so the other ranks of --procs N or mpiexec tokenize the training data alone:
    tokenizing the rest would only cost them time and memory."""
    splits = {"train": train, "eval": eval_, "test": test} if comm.is_root else {"train": train}
    return {name: data for name, data in splits.items() if data is not None}


def refuse_classification_options(args, task_type):
    """Options that only make sense for text classification: one clear line instead of being ignored."""
    if args.task:
        raise ValueError(f"--task {args.task} is a text classification task; it does not go with --task-type "
                         f"{task_type} (give --train FILE)")
    if args.train is None:
        raise ValueError(f"--task-type {task_type} needs --train FILE")
    for flag, value in (("--baseline", args.baseline), ("--baseline-only", args.baseline_only),
                        ("--text-pair-column", args.text_pair_column)):
        if value:
            raise ValueError(f"{flag} applies to text classification only, not to --task-type {task_type}")


def held_out_split(n: int, fraction: float, seed: int, source) -> tuple[np.ndarray, np.ndarray]:
    """(keep, held out) indices: a random `fraction` of n items (at least one each), fixed by the seed."""
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"--eval-split must be between 0 and 1, got {fraction}")
    held = int(round(fraction * n))
    if n < 2:
        raise ValueError(f"{source}: too few examples ({n}) to hold out an eval split; give --eval FILE")
    order = np.random.default_rng([seed, 5]).permutation(n)
    held = min(max(held, 1), n - 1)
    return np.sort(order[held:]), np.sort(order[:held])


def run_summary(args, task_type, checkpoint, out, settings, result, counts: dict, **extra) -> dict:
    """The metrics.json of a run: what was trained on what, every epoch, the best epoch's eval metrics."""
    summary = {"task_type": task_type, "model": args.model, "checkpoint": str(checkpoint), "data": args.train,
               "out": str(out), **counts, **extra,
               "settings": {k: v for k, v in vars(settings).items() if k != "progress"},
               "history": result["history"], "best_epoch": result["best_epoch"], "eval": result["best"],
               "test": None, "train_time_s": result["train_time_s"]}
    return summary


def write_summary(args, out, summary: dict, started: float, log):
    from minibert.io.atomic import atomic_write_text

    summary["wall_time_s"] = round(time.perf_counter() - started, 1)
    atomic_write_text(out / "metrics.json", json.dumps(summary, indent=2) + "\n")
    log(f"saved the best checkpoint and metrics.json to {out}/ ({summary['wall_time_s']:.0f} s in all)")
    if args.json:
        print(json.dumps(summary))
