"""minibert finetune: train a text classifier (BERT + one linear layer) on a labelled CSV/TSV/JSONL file.

Every input is checked before the model is loaded; the best epoch's checkpoint (by eval accuracy) is kept in
--out together with metrics.json and a confusion-matrix PNG. `--task-type tokens` (a word tagger, NER) and
`--task-type qa` (extractive question answering) run from finetune_tokens.py and finetune_qa.py, with the same
settings, checks and training loop (finetune_setup.py, minibert/finetune/train.py).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np

from minibert._plural import counted
from minibert.commands.finetune_setup import DEFAULT_BATCH_SIZE, DEFAULT_MAX_LENGTH
# below MIN_STEPS optimizer steps, fine-tuning often stays at the majority class: the run says so
from minibert.finetune.recipe import MIN_STEPS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.description = (
        "Fine-tune a pre-trained BERT as a text classifier: the [CLS] vector goes through the pooler and one new\n"
        "linear layer, and every weight is trained (BERT's recipe), in NumPy. --task-type tokens tags every word\n"
        "instead (NER: CoNLL or JSONL files, entity-level F1); --task-type qa finds the answer span of a question\n"
        "in a paragraph (SQuAD v1.1/v2.0 JSON, exact match and F1).")
    parser.epilog = """examples:
  minibert finetune --model minilm --train reviews.csv --text-column review --label-column stars --out runs/stars
  minibert finetune --model runs/mini --train nli.jsonl --text-column premise --text-pair-column hypothesis \\
      --label-column label --eval dev.jsonl --out runs/nli
  minibert finetune --task drug-reviews --model minilm --baseline --out runs/drugs
  minibert finetune --task-type tokens --train eng.train --eval eng.testa --test eng.testb --out runs/ner
  minibert finetune --task-type qa --train train-v1.1.json --eval dev-v1.1.json --out runs/squad

--out then holds the best checkpoint (config.json with id2label/label2id, model.safetensors, vocab.txt),
metrics.json and confusion_matrix.png; 'minibert predict --model OUT' uses it, and so does
transformers.BertForSequenceClassification.from_pretrained(OUT) (BertForTokenClassification for --task-type
tokens, BertForQuestionAnswering for qa). See docs/finetuning.md."""
    parser.add_argument("--task-type", choices=("sequence", "tokens", "qa"), default=None,
                        help="sequence: one label per text (default); tokens: a tag per word, NER (--train is a "
                             "CoNLL or JSONL file); qa: extractive question answering (--train is SQuAD JSON). A "
                             "--task brings its own")
    data = parser.add_argument_group("data")
    data.add_argument("--train", metavar="FILE", help="labelled training examples: .csv, .tsv or .jsonl (tokens: "
                      "CoNLL or .jsonl with tokens/tags; qa: SQuAD v1.1/v2.0 .json)")
    from minibert.finetune.tasks import TASKS
    data.add_argument("--task", choices=tuple(TASKS),
                      help="a built-in task instead of --train, with its own train/eval/test splits, head, metrics "
                           "and defaults that fit ~15 minutes of MiniLM on 2 cores (flags override): "
                           + "; ".join(f"{spec.name}: {_defaults_help(spec)}" for spec in TASKS.values())
                           + " (docs/tasks.md)")
    data.add_argument("--eval", metavar="FILE", help="labelled evaluation examples (picks the best epoch)")
    data.add_argument("--eval-split", type=float, default=None, metavar="FRACTION",
                      help="without --eval: hold out this fraction of --train (per class for text classification, "
                           "whole paragraphs for qa), seed --seed (default 0.1)")
    data.add_argument("--test", metavar="FILE",
                      help="labelled test examples, scored once by the best checkpoint (optional)")
    data.add_argument("--text-column", metavar="COL", help="column of the text (default: text; text classification "
                      "with --train only, as are the two column options below)")
    data.add_argument("--text-pair-column", metavar="COL",
                      help="column of a second text, for sentence-pair tasks (entailment, paraphrase, ...)")
    data.add_argument("--label-column", metavar="COL",
                      help="column of the label, a string or an integer (default: label)")
    data.add_argument("--max-eval-examples", type=int, metavar="N",
                      help="evaluate and test on the first N examples of each only (smoke runs; default: all)")
    data.add_argument("--max-train-examples", type=int, metavar="N",
                      help="train on N examples only, to fit a compute budget: a stratified random subset for text "
                           "classification, a random subset of sentences for --task-type tokens, the first N "
                           "questions for qa")
    model = parser.add_argument_group("model and training")
    model.add_argument("--model", default="minilm", metavar="DIR",
                       help="checkpoint folder, pre-training run folder (its latest checkpoint), or 'minilm' "
                            "(the built-in all-MiniLM-L6-v2; default)")
    model.add_argument("--epochs", type=int, default=None,
                       help="passes over the training data (default: enough for 300 optimizer steps, 3 to 20; 3 "
                            "for --task-type qa)")
    model.add_argument("--lr", type=float, default=None,
                       help="peak learning rate of AdamW (default: by the model's size: 3e-5 for a hidden size "
                            "above 256 such as MiniLM's, 5e-4 for a small model such as the mini; 1e-4 for "
                            "MiniLM's size tagging fewer than 5,000 sentences)")
    model.add_argument("--batch-size", type=int, default=None, help="examples per step (default 32)")
    model.add_argument("--max-length", type=int, default=None,
                       help=f"tokens per example, longer ones are truncated (default: the length a --model fine-tuned "
                            f"by minibert was fine-tuned with, else {DEFAULT_MAX_LENGTH}, 384 for --task-type qa, or "
                            f"the model's max_position_embeddings if smaller); recorded in --out, where 'minibert "
                            f"predict' and a further 'minibert finetune' take it as their default")
    model.add_argument("--warmup-ratio", type=float, default=0.1,
                       help="share of the steps over which the learning rate warms up from 0 (default 0.1); it "
                            "then decays linearly to 0")
    model.add_argument("--weight-decay", type=float, default=0.01,
                       help="AdamW decoupled weight decay, not on biases and LayerNorm (default 0.01)")
    model.add_argument("--max-grad-norm", type=float, default=1.0,
                       help="clip the global gradient norm to this (default 1.0; 0 = no clipping)")
    model.add_argument("--dropout", type=float, metavar="P",
                       help="dropout of the body and the classifier while fine-tuning (default: 0.1 for a small "
                            "model, else the checkpoint's hidden_dropout_prob and attention_probs_dropout_prob; the "
                            "log shows which)")
    model.add_argument("--long-texts", choices=("truncate", "windows", "head-tail"), default=None,
                       help="texts longer than --max-length: cut at it, read whole as overlapping windows whose "
                            "logits are averaged, or read as their head and tail (the first quarter of the window "
                            "from the start, the rest from the end: Sun et al. 2019), in training, evaluation and "
                            "'minibert predict' (default: windows for a model of fewer than 128 positions such as "
                            "the mini, else truncate, or head-tail on --task imdb)")
    model.add_argument("--window-overlap", type=int, default=None, metavar="N",
                       help="tokens that neighbouring windows share (default: a quarter of --max-length)")
    model.add_argument("--recompute", action="store_true",
                       help="activation recompute: keep only each layer's input and compute the layer again in the "
                            "backward: far less memory for long texts or large batches, about one more forward per "
                            "step, the same numbers bit for bit")
    model.add_argument("--adapt-steps", type=int, default=None, metavar="N",
                       help="first go on pre-training the model (masked LM) for N steps on the training texts, "
                            "without their labels: task-adaptive pre-training, for a model pre-trained on other "
                            "text; needs the checkpoint's masked-LM head (a 'minibert pretrain' run) (default: none)")
    model.add_argument("--adapt-lr", type=float, default=2e-4, metavar="LR",
                       help="peak learning rate of --adapt-steps (default 2e-4)")
    model.add_argument("--select-metric", choices=("accuracy", "macro_f1", "f1", "token_accuracy", "exact_match"),
                       help="eval number that picks the best epoch (default: accuracy for sequence, entity F1 for "
                            "tokens, F1 for qa)")
    model.add_argument("--no-group-by-length", action="store_true",
                       help="fully random batches (default: batches of similar lengths, which saves padding)")
    model.add_argument("--seed", type=int, default=0, help="seed of the split, batch order, dropout, new head")
    from minibert.training.procs import add_procs_argument
    add_procs_argument(parser, "every N-th example of a batch and its share of the cores, the gradients summed "
                       "so that a step is the whole batch's", ", or --baseline-only")
    qa = parser.add_argument_group("question answering (--task-type qa)")
    qa.add_argument("--doc-stride", type=int, default=None, metavar="N",
                    help="a context longer than the window is cut into windows overlapping by N tokens (default "
                         "min(128, a third of --max-length))")
    qa.add_argument("--max-answer-length", type=int, default=None, metavar="N",
                    help="longest answer, in tokens, that prediction considers (default 30)")
    out = parser.add_argument_group("output")
    out.add_argument("--out", metavar="DIR",
                     help="where the best checkpoint, metrics.json and confusion_matrix.png go (default "
                          "runs/finetune-<task or train file name>)")
    out.add_argument("--overwrite", action="store_true",
                     help="replace a model already in --out (with --baseline-only: write beside it)")
    out.add_argument("--baseline", action="store_true",
                     help="also train TF-IDF + logistic regression (scikit-learn) on the same split and report "
                          "its accuracy beside BERT's")
    out.add_argument("--baseline-only", action="store_true",
                     help="only the TF-IDF baseline: no BERT (quick: is fine-tuning worth it on this data?)")
    out.add_argument("--json", action="store_true", help="print the final metrics as one JSON object on stdout")
    out.add_argument("--no-progress", action="store_true", help="no progress bars")


def _defaults_help(spec) -> str:
    values = ", ".join(f"--{name.replace('_', '-')} {value}" for name, value in spec.defaults.items())
    return f"{values} ({spec.why})" if values else spec.why


def _prepare_data(args, log):
    """(train, eval, test or None, label names, description): every data check, before any model is loaded."""
    from minibert.commands.finetune_setup import check_data_options
    from minibert.finetune.data import build_label_names, check_labels_known, limit_examples, load_examples, \
        stratified_split
    from minibert.commands.finetune_setup import load_builtin_task

    eval_split = check_data_options(args, "sequence")
    if args.task:
        train, eval_, test = load_builtin_task(args, log)
        source = f"task {args.task}"
    else:
        columns = dict(text_column=args.text_column or "text", label_column=args.label_column or "label",
                       text_pair_column=args.text_pair_column)
        train = load_examples(args.train, **columns)
        test = load_examples(args.test, **columns) if args.test else None
        if args.eval:
            eval_ = load_examples(args.eval, **columns)
        else:
            build_label_names(train)  # a single class is reported as such, not as a split problem
            keep, held = stratified_split(train.labels, eval_split, args.seed)
            if len(held) == 0 or len(keep) == 0:
                raise ValueError(f"{args.train}: too few examples ({len(train)}) to hold out an eval split; "
                                 f"give --eval FILE")
            train, eval_ = (train.subset(keep, f"{args.train} (train part)"),
                            train.subset(held, f"{args.train} (held-out eval part)"))
        source = args.train
    label_names = build_label_names(train)
    label2id = {name: i for i, name in enumerate(label_names)}
    for other in (eval_, test):
        if other is not None:
            check_labels_known(other, label2id, f"the training data ({source})")
    if args.max_train_examples is not None:
        before = len(train)
        train = limit_examples(train, args.max_train_examples, args.seed)
        if len(train) < before:
            log(f"training on {len(train)} of {before} examples (--max-train-examples)")
        missing = set(label_names) - set(train.labels)
        if missing:
            raise ValueError(f"--max-train-examples {args.max_train_examples} leaves no training example of "
                             f"{sorted(missing)[0]!r}; raise it")
    return train, eval_, test, label_names, source


def _baseline_only(args, train, eval_, test, label_names, source, out, started, log) -> int:
    from minibert.finetune.baseline import tfidf_baseline
    from minibert.finetune.metrics import format_report
    from minibert.io.atomic import atomic_write_text

    label2id = {name: i for i, name in enumerate(label_names)}
    result = tfidf_baseline(train, eval_, label2id, test, seed=args.seed, log=log)
    split = "test" if test is not None else "eval"
    log(f"TF-IDF + logistic regression (C={result['C']} chosen on eval), {split} split:")
    log(format_report(result[split]))
    summary = {"data": source, "labels": label_names, "num_train": len(train), "num_eval": len(eval_),
               "num_test": len(test) if test is not None else None, "baseline": result, "reported_split": split,
               "wall_time_s": round(time.perf_counter() - started, 1)}
    atomic_write_text(out / "baseline_metrics.json", json.dumps(summary, indent=2) + "\n")
    if args.json:
        print(json.dumps(summary))
    return 0


def run(args) -> int:
    from minibert.commands.finetune_setup import finetune_on_ranks
    if args.seed < 0:  # (NumPy's own message names no option)
        raise ValueError(f"--seed must be a non-negative integer, got {args.seed}")
    if args.task:
        from minibert.commands.finetune_setup import take_task_defaults
        take_task_defaults(args)
    args.task_type = args.task_type or "sequence"
    if args.batch_size is None:
        args.batch_size = DEFAULT_BATCH_SIZE
    if args.task_type == "tokens":
        from minibert.commands.finetune_tokens import _check_words_fit, _prepare_tagged, run_tokens
        return finetune_on_ranks(args, run_tokens, _prepare_tagged, "tokens", _check_words_fit)
    if args.task_type == "regression":
        from minibert.commands.finetune_regression import _prepare_scored, run_regression
        return finetune_on_ranks(args, run_regression, _prepare_scored, "regression")
    if args.task_type == "qa":
        from minibert.commands.finetune_qa import _check_windows, _prepare_squad, run_qa
        return finetune_on_ranks(args, run_qa, _prepare_squad, "qa", _check_windows)
    return finetune_on_ranks(args, _run_sequence, _prepare_data, "sequence")


def _run_sequence(args, comm) -> int:
    from minibert.finetune.data import label_ids
    from minibert.finetune.metrics import format_report
    from minibert.finetune.plots import save_confusion_matrix
    from minibert.finetune.train import encode_examples, evaluate, evaluation, train_classifier
    from minibert.commands.finetune_setup import (_out_dir, best_model_saver, load_checked_tokenizer, log_recipe,
                                                  make_log, max_length_line, model_to_finetune, setup_training,
                                                  splits_of_this_rank)

    started = time.perf_counter()

    log = make_log(args)

    # ---- every check first: data, model folder, settings, output folder, optional dependencies
    train, eval_, test, label_names, source = _prepare_data(args, log)
    if args.baseline_only:  # no model involved: nothing else to check
        if not comm.is_root:  # (under mpiexec: one rank trains the baseline and writes)
            return 0
        # (into a folder that holds a model only with --overwrite: its baseline_metrics.json would otherwise sit
        # beside another run's model, perhaps of other data)
        out = _out_dir(args)
        from minibert.finetune.baseline import _import_sklearn
        _import_sklearn()
        return _baseline_only(args, train, eval_, test, label_names, source, out, started, log)
    checkpoint, tokenizer_dir, config, settings, out = setup_training(args, "sequence", len(train))
    max_length = settings.max_length
    if args.baseline:
        from minibert.finetune.baseline import _import_sklearn
        _import_sklearn()

    # ---- model and tokens
    log(f"data: {source}: {len(train)} train / {len(eval_)} eval"
        f"{f' / {len(test)} test' if test is not None else ''} examples, {len(label_names)} classes")
    log(f"model: {checkpoint}")
    log(max_length_line(args, config, checkpoint, settings, "sequence"))
    tokenizer = load_checked_tokenizer(tokenizer_dir, config, checkpoint)
    if args.adapt_steps:
        import tempfile
        from minibert.finetune.adapt import adapt
        with tempfile.TemporaryDirectory(prefix="minibert-adapted-") as folder:
            adapted = adapt(checkpoint, tokenizer, train.texts, max_length, args.adapt_steps, args.adapt_lr,
                            Path(folder), settings.batch_size, args.seed, log, not args.no_progress and comm.is_root)
            model = model_to_finetune(adapted, label_names, args, settings, log)
    else:
        model = model_to_finetune(checkpoint, label_names, args, settings, log)
    label2id = model.label2id
    pad_id = tokenizer.pad_token_id
    progress = not args.no_progress
    splits = splits_of_this_rank(comm, train, eval_, test)  # (rank 0 alone evaluates and tests)
    y = {name: label_ids(ex, label2id) for name, ex in splits.items()}
    owner = {}  # with windows: the text each window belongs to, per split
    if settings.long_texts == "windows":
        from minibert.finetune.windows import encode_windows
        encoded = {}
        for name, ex in splits.items():
            encoded[name], owner[name] = encode_windows(tokenizer, ex, max_length, settings.window_overlap, progress)
        long = int((np.bincount(owner["train"]) > 1).sum())
        log(f"tokens: {long} of {len(train)} training texts are longer than {max_length} tokens and are read as "
            f"overlapping windows ({settings.window_overlap} tokens shared): {len(encoded['train'])} training "
            f"windows; a text's prediction is the mean of its windows' logits")
        y_train = y["train"][owner["train"]]  # (W,) each window has its text's label
    elif settings.long_texts == "head-tail":
        from minibert.finetune.head_tail import encode_head_tail
        encoded = {name: encode_head_tail(tokenizer, ex, max_length, progress) for name, ex in splits.items()}
        cut = sum(len(ids) >= max_length for ids, _ in encoded["train"])
        log(f"tokens: {cut} of {len(train)} training texts reach the max length and are read as their head and "
            f"tail (the middle dropped)")
        y_train = y["train"]
    else:
        encoded = {name: encode_examples(tokenizer, ex, max_length, progress) for name, ex in splits.items()}
        truncated = sum(len(ids) >= max_length for ids, _ in encoded["train"])
        log(f"tokens: {truncated} of {len(train)} training examples reach the max length (truncated)")
        y_train = y["train"]
    if args.epochs is None:  # windows are examples too: the epochs that give the recipe's steps
        from minibert.finetune.recipe import epochs_for
        settings.epochs = epochs_for(len(encoded["train"]), settings.batch_size)
    log_recipe(settings, log)
    steps = math.ceil(len(encoded["train"]) / settings.batch_size) * settings.epochs
    if steps < MIN_STEPS:
        epochs = f"--epochs {settings.epochs}" if args.epochs is not None else f"{settings.epochs} epochs"
        log(f"note: only {counted(steps, 'optimizer step')} ({counted(len(encoded['train']), 'example')}, {epochs}, "
            f"--batch-size {settings.batch_size}); a small data set usually needs more: a smaller --batch-size or "
            f"more --epochs (see docs/finetuning.md)")

    # ---- train; the best epoch is saved as it happens, so an interrupted run still leaves a model, with what
    # `minibert predict` needs to read texts as training did
    record = {"task_type": "sequence", "max_length": max_length, "text_pairs": train.text_pairs is not None,
              "long_texts": settings.long_texts}
    if settings.long_texts == "windows":
        record["window_overlap"] = settings.window_overlap
    result = train_classifier(model, encoded["train"], y_train, encoded.get("eval"), y.get("eval"), label_names,
                              settings, pad_id, on_best=best_model_saver(args, out, tokenizer, comm, record), log=log,
                              comm=comm, eval_owner=owner.get("eval"))
    if not comm.is_root:  # (--procs: rank 0 tests, reports and writes)
        return 0
    summary = {
        "model": args.model, "checkpoint": str(checkpoint), "data": source, "out": str(out),
        "labels": label_names, "num_train": len(train), "num_eval": len(eval_),
        "num_test": len(test) if test is not None else None,
        "settings": {k: v for k, v in vars(settings).items() if k != "progress"},
        "history": result["history"], "best_epoch": result["best_epoch"], "eval": result["best"],
        "test": None, "baseline": None, "train_time_s": result["train_time_s"], "processes": comm.size,
    }
    if test is not None:
        with evaluation(comm):
            summary["test"] = evaluate(model, encoded["test"], y["test"], label_names, pad_id, progress=progress,
                                       desc="testing", owner=owner.get("test"))
    report_split = "test" if test is not None else "eval"
    final = summary[report_split]
    log(f"\nbest epoch {result['best_epoch']}, {report_split} split ({counted(final['num_examples'], 'example')}):")
    log(format_report(final))

    if args.baseline:
        from minibert.finetune.baseline import tfidf_baseline
        log("\ntraining the TF-IDF + logistic regression baseline on the same split ...")
        summary["baseline"] = tfidf_baseline(train, eval_, label2id, test, seed=args.seed, log=log)
        base = summary["baseline"][report_split]
        log(f"{report_split} accuracy: BERT {final['accuracy']:.4f}  vs  TF-IDF + LR {base['accuracy']:.4f} "
            f"(macro-F1 {final['macro_f1']:.4f} vs {base['macro_f1']:.4f})")

    png = save_confusion_matrix(final["confusion_matrix"], label_names, out / "confusion_matrix.png",
                                title=f"{Path(str(source)).name}: {report_split} split, best epoch")
    if png is None:
        log("note: matplotlib is not installed, so no confusion_matrix.png (pip install 'minibert[plot]')")
    summary["reported_split"] = report_split
    summary["wall_time_s"] = round(time.perf_counter() - started, 1)
    from minibert.io.atomic import atomic_write_text
    atomic_write_text(out / "metrics.json", json.dumps(summary, indent=2) + "\n")
    log(f"saved the best checkpoint, metrics.json{' and confusion_matrix.png' if png else ''} to {out}/ "
        f"({summary['wall_time_s']:.0f} s in all)")
    if args.json:
        print(json.dumps(summary))
    return 0
