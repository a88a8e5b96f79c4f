"""What every kind of fine-tuning run (sequence, tokens, qa) does the same way around its own data and head:
check the model folder and settings, load the tokenizer, hold out an eval split, log, and write metrics.json;
and the --max-length check that `minibert predict` (and its qa and tokens variants) shares.
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

DEFAULT_MAX_LENGTH = 128
DEFAULT_BATCH_SIZE = 32
DEFAULT_SELECT = {"sequence": "accuracy", "tokens": "f1", "qa": "f1", "regression": "spearman"}
TASK_METRICS = {"sequence": ("accuracy", "macro_f1"), "tokens": ("f1", "token_accuracy"), "qa": ("f1", "exact_match"),
                "regression": ("spearman", "pearson")}


# The fewest tokens per example that leave room for the data: [CLS] and the [SEP]s, and at least one token of
# each part (fewer would train on nothing: a tagger with no word to label reports a loss of 0).
MIN_MAX_LENGTH = {"sequence": (3, "[CLS] text [SEP]"), "pairs": (5, "[CLS] text [SEP] pair [SEP]"),
                  "tokens": (3, "[CLS] word [SEP]"), "qa": (5, "[CLS] question [SEP] context [SEP]"),
                  "regression": (5, "[CLS] sentence [SEP] sentence [SEP]")}


def setup_training(args, task_type, num_train: int | None = None):
    """Every model-side check of a fine-tuning run, before anything is loaded: the model folder, --max-length,
    the training settings (the flags given, the recipe of the model and `num_train` training examples for the
    others: finetune/recipe.py), --dropout and --out. Returns (checkpoint, tokenizer folder, config, settings,
    out)."""
    from minibert.config import BertConfig
    from minibert.finetune.model_source import resolve_model
    from minibert.finetune.recipe import choose_recipe, epochs_for
    from minibert.finetune.train import Settings
    from minibert.finetune.windows import check_window_overlap

    if args.batch_size is None:  # (neither --batch-size nor a built-in task's default)
        args.batch_size = DEFAULT_BATCH_SIZE
    select = args.select_metric or DEFAULT_SELECT[task_type]
    if select not in TASK_METRICS[task_type]:
        raise ValueError(f"--select-metric {select} does not apply to --task-type {task_type}; expected one of "
                         f"{', '.join(TASK_METRICS[task_type])}")
    checkpoint, tokenizer_dir = resolve_model(args.model)
    config = BertConfig.from_json_file(checkpoint)
    max_length, origin = args.max_length, "--max-length"
    if max_length is None:
        max_length, origin = default_max_length(config, checkpoint, task_type)
    elif max_length > config.max_tokens and "max_length" in getattr(args, "task_defaults", {}):
        max_length = config.max_tokens  # (a built-in task's default: as long as the model's positions allow)
    elif max_length > config.max_tokens:
        raise ValueError(f"--max-length {max_length} is longer than the model's max_position_embeddings "
                         f"({config.max_tokens}, {checkpoint / 'config.json'})")
    minimum, layout = MIN_MAX_LENGTH["pairs" if task_type == "sequence" and args.text_pair_column else task_type]
    if max_length < minimum:
        where = f"--max-length {max_length}" if args.max_length is not None else f"max length {max_length} ({origin})"
        raise ValueError(f"{where} leaves no room for {layout} with one token of each part at least; give "
                         f"--max-length {minimum} or more")
    if args.dropout is not None and not 0.0 <= args.dropout < 1.0:
        raise ValueError(f"--dropout must be in [0, 1), got {args.dropout}")
    given = {"lr": args.lr, "epochs": args.epochs, "dropout": args.dropout,
             "long_texts": getattr(args, "long_texts", None), "window_overlap": getattr(args, "window_overlap", None)}
    pairs = bool(getattr(args, "text_pair_column", None)) or task_type == "regression"
    if given["long_texts"] in ("windows", "head-tail") and pairs:
        raise ValueError(f"--long-texts {given['long_texts']} cuts single texts; text pairs (--text-pair-column) are "
                         f"truncated, longest first: drop --long-texts {given['long_texts']}")
    if given["window_overlap"] is not None:
        check_window_overlap(given["window_overlap"], max_length)
    adapt_steps = getattr(args, "adapt_steps", None)
    if adapt_steps is not None and (adapt_steps < 0 or not args.adapt_lr > 0):
        raise ValueError(f"--adapt-steps must be >= 0 and --adapt-lr positive, got {adapt_steps} and {args.adapt_lr}")
    if adapt_steps:
        from minibert.finetune.adapt import check_adaptable
        check_adaptable(checkpoint)
    recipe = choose_recipe(config, max_length, given, task_type, pairs, num_train,
                           published_lr=getattr(args, "task_published_lr", None),
                           long_model_texts=getattr(args, "task_long_texts", None))
    task_defaults = getattr(args, "task_defaults", {})  # (a built-in task's values: not flags, said in the log)
    recipe.flags = tuple(name for name in recipe.flags if name not in task_defaults)
    # (sequence: set again once tokenized. --epochs 0 and --batch-size 0 reach validate() below, to be refused)
    epochs = recipe.epochs if recipe.epochs is not None else epochs_for(num_train or 1, max(1, args.batch_size))
    settings = Settings(epochs=epochs, lr=recipe.lr, batch_size=args.batch_size, max_length=max_length,
                        warmup_ratio=args.warmup_ratio, weight_decay=args.weight_decay,
                        max_grad_norm=args.max_grad_norm, seed=args.seed, select_metric=select,
                        group_by_length=not args.no_group_by_length, dropout=recipe.dropout,
                        long_texts=recipe.long_texts, window_overlap=recipe.window_overlap,
                        recipe=recipe.kind, recipe_flags=recipe.flags, progress=not args.no_progress)
    settings.validate()
    return checkpoint, tokenizer_dir, config, settings, _out_dir(args)


def default_max_length(config, checkpoint, task_type) -> tuple[int, str]:
    """(max length, where it comes from) of a run without --max-length: the length the starting model was
    fine-tuned with for the same task type (loading.recorded_max_length, `minibert predict`'s default too), else
    DEFAULT_MAX_LENGTH (384 for qa); never more than the model's positions."""
    from minibert.finetune.loading import recorded_max_length
    recorded = recorded_max_length(config, task_type)
    if recorded:
        return min(recorded, config.max_tokens), (f"the length {checkpoint} was fine-tuned with, recorded in its "
                                                  f"config.json; --max-length N to change it")
    default = DEFAULT_MAX_LENGTH if task_type != "qa" else 384
    if config.max_tokens < default:
        return config.max_tokens, f"the model's max_position_embeddings, {checkpoint / 'config.json'}"
    return default, "the default; --max-length N to change it"


def max_length_line(args, config, checkpoint, settings, task_type) -> str:
    """The log's line on the run's max length and where it comes from: --max-length, or default_max_length."""
    origin = "--max-length" if args.max_length is not None else default_max_length(config, checkpoint, task_type)[1]
    if "max_length" in getattr(args, "task_defaults", {}):
        origin = f"task {args.task}'s default; --max-length N to change it"
    return f"max length: {settings.max_length} tokens per example ({origin})"


def checked_max_length(args, config, default: int, minimum: int, task_type: str | None = None) -> int:
    """--max-length, or the length the model was fine-tuned with for `task_type` (loading.recorded_max_length;
    None: no such default), or for a folder without that record `default`, cut to the model's positions; between
    `minimum` and the limit of the model's config (a BertConfig: checked before the weights load). Predicting at
    the fine-tuning's length reads every text as training and the reported scores did."""
    from minibert.finetune.loading import recorded_max_length

    limit = config.max_tokens
    default = recorded_max_length(config, task_type) or default
    max_length = args.max_length if args.max_length is not None else min(default, limit)
    if not minimum <= max_length <= limit:
        raise ValueError(f"--max-length {max_length} must be between {minimum} and the model's "
                         f"max_position_embeddings ({limit})")
    return max_length


REPORTS = ("metrics.json", "confusion_matrix.png", "baseline_metrics.json")  # what runs write beside the model


def _out_path(args) -> Path:
    """--out, or runs/finetune-<task or training file name>."""
    return Path(args.out) if args.out else Path("runs") / f"finetune-{args.task or Path(args.train).stem}"


def data_source(args) -> str:
    """What a run trains on, for the log and metrics.json: the --train file or the built-in task."""
    return f"task {args.task}" if getattr(args, "task", None) else str(args.train)


def _out_dir(args) -> Path:
    """The output folder, checked before any work: a folder (or nothing yet) where every file a run writes can be
    written, and without a model unless --overwrite."""
    from minibert.finetune.loading import SAVED_FILES
    from minibert.io.atomic import check_folder_path, check_output_file
    out = _out_path(args)
    check_folder_path(out, "--out")  # (a file in the way: named as --out was given)
    for name in SAVED_FILES + REPORTS:  # no permission there, or a folder of that name: now, not after training
        check_output_file(out / name, "--out")
    if (out / "model.safetensors").exists() and not args.overwrite:
        raise FileExistsError(f"--out {out}: already holds a model; choose another --out or add --overwrite")
    return out


def best_model_saver(args, out, tokenizer, comm, record: dict):
    """fit's `on_best` (rank 0 saves the best epoch's model in --out, and remembers the epoch for the message of an
    interrupted run). With --overwrite, the previous run's reports are removed first: this run may not write its
    own (interrupted, no matplotlib, no --baseline-only), and --out must not pair its model with older numbers.
    `record`: how the model was fine-tuned (loading.save_classifier), for `minibert predict`'s defaults."""
    from minibert.finetune.loading import save_classifier

    if args.overwrite and comm.is_root:
        for name in REPORTS:
            (out / name).unlink(missing_ok=True)

    def on_best(model, epoch, metrics):
        save_classifier(model, tokenizer, out, record)
        args.best_saved = (epoch, out)
    return on_best


def load_checked_tokenizer(tokenizer_dir, config, checkpoint):
    from minibert.finetune.loading import load_tokenizer

    tokenizer = load_tokenizer(tokenizer_dir)
    if tokenizer.vocab_size != config.vocab_size:
        raise ValueError(f"{tokenizer_dir}: the tokenizer has {tokenizer.vocab_size} tokens but "
                         f"{checkpoint / 'config.json'} says vocab_size={config.vocab_size}")
    return tokenizer


def log_recipe(settings, log):
    """The log's recipe line (finetune/recipe.py): what the run trains with, and which values flags gave."""
    from minibert.finetune.recipe import describe
    log(describe(settings, settings.recipe, settings.recipe_flags) + " (docs/finetuning.md; flags override)")


def apply_dropout(model, settings, log):
    """The settings' dropout for the body and the head (saved in config.json too, as the model was trained):
    --dropout's or the recipe's (settings.recipe_flags says which); None: the checkpoint's own. The log says which,
    because a `minibert pretrain` or `distill` checkpoint carries pre-training's default of 0 (short runs learn
    faster without)."""
    key = getattr(model, "dropout_key", "classifier_dropout")  # (DistilBERT's classifier: seq_classif_dropout)
    dropout = settings.dropout
    origin = "--dropout" if "dropout" in settings.recipe_flags else "the recipe"
    if dropout is not None:
        model.config.hidden_dropout_prob = model.config.attention_probs_dropout_prob = dropout
        if hasattr(model, "classifier_dropout"):
            model.config.extra[key] = model.classifier_dropout = dropout
        log(f"dropout {dropout} ({origin})")
        return
    config = model.config
    values = {"attention": config.attention_probs_dropout_prob,
              "classifier": getattr(model, "classifier_dropout", config.hidden_dropout_prob)}
    others = ", ".join(f"{name} {p}" for name, p in values.items() if p != config.hidden_dropout_prob)
    hint = ("; BERT fine-tunes with --dropout 0.1" if max(config.hidden_dropout_prob, *values.values()) == 0 else
            "; --dropout P to change it")
    log(f"dropout {config.hidden_dropout_prob}{f' ({others})' if others else ''} (the checkpoint's config.json"
        f"{hint})")


def model_to_finetune(checkpoint, labels, args, settings, log, **load):
    """The model every fine-tuning command trains: the checkpoint's body with a head for `labels`
    (finetune/loading.py; `load` passes cls=...), the settings' dropout, and --recompute."""
    from minibert.finetune.loading import load_for_finetuning

    model = load_for_finetuning(checkpoint, labels, seed=args.seed, log=log, **load)
    apply_dropout(model, settings, log)
    model.set_recompute(args.recompute)
    return model


def make_log(args):
    if getattr(args, "silent_rank", False):  # a rank other than 0 of --procs N: rank 0 speaks for the job
        return lambda message: None

    def log(message):  # progress and notes go to stderr when stdout carries the JSON
        print(message, file=sys.stderr if args.json else sys.stdout, flush=True)
    return log


def check_run(args, prepare, task_type, check_data=None) -> None:
    """Every check of a fine-tuning run that `finetune_on_ranks` does before its ranks start: the data
    (`prepare(args, log)`), the model folder, settings and --out, the tokenizer, what the data needs of the
    tokenizer and settings (`check_data(args, prepared data, settings, tokenizer)`: a cheap look at the data only,
    the whole tokenization is the ranks' work), and scikit-learn for --baseline."""
    prepared = prepare(args, lambda message: None)
    checkpoint, tokenizer_dir, config, settings, _ = setup_training(args, task_type)
    tokenizer = load_checked_tokenizer(tokenizer_dir, config, checkpoint)
    if check_data is not None:
        check_data(args, prepared, settings, tokenizer)
    if getattr(args, "baseline", False):  # (text classification only: the other kinds refuse it in `prepare`)
        from minibert.finetune.baseline import _import_sklearn
        _import_sklearn()


def finetune_on_ranks(args, task, prepare, task_type, check_data=None) -> int:
    """Run `task(args, comm)` in this process, or on the ranks of `--procs N` (training/ranks.py): the command's
    process starts ranks 1..N-1 of the same command and becomes rank 0. Before any rank starts, `check_run(args,
    prepare, task_type, check_data)` runs every check of the run here, so that bad input is one line from one
    process. Ranks other than 0 train silently (no log, no progress bars) and write nothing; an error on any rank
    ends every rank, and SIGTERM ends the run as Ctrl-C does (the best epoch so far is already saved)."""
    from minibert.finetune.train import TrainingDiverged
    from minibert.training.distributed import check_divisible
    from minibert.training.ranks import not_yet_a_rank, run_on_ranks, start_ranks

    if not_yet_a_rank():
        single = "--baseline-only trains no BERT" if getattr(args, "baseline_only", False) else None
        start_ranks(args, args.batch_size, lambda: check_run(args, prepare, task_type, check_data), single)

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


DEFAULT_EVAL_SPLIT = 0.1

# Options that only one kind of run reads (their defaults are None, so that "given" shows), with the task types
# they apply to: any other kind refuses them with one line rather than ignore them.
TASK_OPTIONS = {"--baseline": ("baseline", ("sequence", "tokens", "regression")),
                "--baseline-only": ("baseline_only", "sequence"),
                "--text-column": ("text_column", "sequence"), "--label-column": ("label_column", "sequence"),
                "--text-pair-column": ("text_pair_column", "sequence"), "--doc-stride": ("doc_stride", "qa"),
                "--max-answer-length": ("max_answer_length", "qa"), "--long-texts": ("long_texts", "sequence"),
                "--window-overlap": ("window_overlap", "sequence"), "--adapt-steps": ("adapt_steps", "sequence")}
KINDS = {"sequence": "text classification", "tokens": "token classification (--task-type tokens)",
         "qa": "question answering (--task-type qa)", "regression": "similarity (--task stsb)"}


def take_task_defaults(args) -> None:
    """A built-in task's kind and defaults (finetune/tasks.py) for the options no flag gave; a --task-type that is
    not the task's is one line. args.task_defaults: the values taken, for the log."""
    from minibert.finetune.tasks import TASKS

    spec = TASKS[args.task]
    if args.task_type is not None and args.task_type != spec.kind:
        raise ValueError(f"--task {args.task} is a {KINDS[spec.kind].split(' (')[0]} task; it does not go with "
                         f"--task-type {args.task_type} (drop --task-type, or give --train FILE)")
    args.task_type = spec.kind
    args.task_defaults = {name: value for name, value in spec.defaults.items() if getattr(args, name) is None}
    for name, value in args.task_defaults.items():
        setattr(args, name, value)
    args.task_published_lr = spec.published_lr  # (the recipe's, for a published-size model with no --lr)
    args.task_long_texts = spec.long_texts  # (the recipe's, for a model of 128 positions or more)


def load_builtin_task(args, log):
    """(train, eval, test) of --task, after the options that do not go with one are refused; cut to
    --max-eval-examples; the log says which task defaults the run took."""
    from minibert.finetune.tasks import TASKS, defaults_line, first, load_task

    given = [flag for flag, value in (("--eval", args.eval), ("--test", args.test),
                                      ("--text-column", getattr(args, "text_column", None)),
                                      ("--label-column", getattr(args, "label_column", None)),
                                      ("--text-pair-column", getattr(args, "text_pair_column", None)))
             if value is not None]
    if given:
        raise ValueError(f"--task {args.task} brings its own eval and test splits and columns; drop "
                         f"{'/'.join(given)}")
    task = load_task(args.task)
    log(defaults_line(TASKS[args.task], getattr(args, "task_defaults", {})))
    eval_, test = task.eval, task.test
    if getattr(args, "max_eval_examples", None) is not None:
        eval_, test = first(eval_, args.max_eval_examples), first(test, args.max_eval_examples)
        log(f"evaluating on {len(eval_)} and testing on {len(test)} examples (--max-eval-examples)")
    return task.train, eval_, test


def check_data_options(args, task_type) -> float:
    """The options that say which data a run reads, checked before any file is read: --train or --task (a built-in
    task is a text classification task), the options of other kinds of run, --max-train-examples, and
    --eval-split. Returns the --eval-split fraction (default 0.1)."""
    if task_type == "sequence" or args.task:
        if (args.task is None) == (args.train is None):
            raise ValueError("give either --train FILE or --task NAME (and not both)")
    elif args.train is None:
        raise ValueError(f"--task-type {task_type} needs --train FILE")
    for flag, (name, applies_to) in TASK_OPTIONS.items():
        value = getattr(args, name)  # (None: not given; False: a flag not given. Not `in (None, False)`: 0 == False)
        kinds = (applies_to,) if isinstance(applies_to, str) else applies_to
        if value is not None and value is not False and task_type not in kinds:
            said = ", ".join(KINDS[kind] for kind in kinds)
            this = f"--task-type {task_type}" if task_type != "regression" else f"--task {args.task}"
            raise ValueError(f"{flag} applies to {said} only, not to {this}")
    if getattr(args, "max_eval_examples", None) is not None and args.max_eval_examples < 1:
        raise ValueError(f"--max-eval-examples must be at least 1, got {args.max_eval_examples}")
    if args.max_train_examples is not None and args.max_train_examples < 1:
        raise ValueError(f"--max-train-examples must be at least 1, got {args.max_train_examples}")
    if args.eval_split is None:
        return DEFAULT_EVAL_SPLIT
    if args.task:
        raise ValueError(f"--eval-split {args.eval_split}: --task {args.task} brings its own eval split; drop "
                         f"--eval-split")
    if args.eval:
        raise ValueError(f"--eval-split {args.eval_split} holds out part of --train, but --eval {args.eval} is the "
                         f"eval set; drop one of the two")
    if not 0.0 < args.eval_split < 1.0:
        raise ValueError(f"--eval-split must be between 0 and 1 (the fraction of --train held out), got "
                         f"{args.eval_split}")
    return args.eval_split


def held_out_split(n: int, fraction: float, seed: int, source) -> tuple[np.ndarray, np.ndarray]:
    """(keep, held out) indices: a random `fraction` (0 < fraction < 1: checked by the callers, in the terms of
    their options) of n items, at least one each, fixed by the seed."""
    held = int(round(fraction * n))
    if n < 2:
        raise ValueError(f"{source}: too few examples ({n}) to hold out an eval split; give --eval FILE")
    order = np.random.default_rng([seed, 5]).permutation(n)
    held = min(max(held, 1), n - 1)
    return np.sort(order[held:]), np.sort(order[:held])


def run_summary(args, task_type, checkpoint, out, settings, result, counts: dict, **extra) -> dict:
    """The metrics.json of a run: what was trained on what, every epoch, the best epoch's eval metrics."""
    summary = {"task_type": task_type, "model": args.model, "checkpoint": str(checkpoint), "data": data_source(args),
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
