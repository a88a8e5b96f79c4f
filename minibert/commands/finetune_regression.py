"""minibert finetune --task stsb: fine-tune a similarity model, BERT with a regression head (one output, the
score; mean squared error, transformers' problem_type "regression") on sentence pairs.

Every data check happens before the model loads. The best epoch by Spearman's correlation on eval is kept in
--out with metrics.json (Spearman, Pearson and the mean squared error on eval and test, and with --baseline the
TF-IDF cosine and the starting model's zero-shot cosine).
"""

from __future__ import annotations

import time


from minibert._plural import counted


def _prepare_scored(args, log):
    """(train, eval, test): a built-in similarity task's pairs, every check done, before any model loads."""
    from minibert.commands.finetune_setup import check_data_options, held_out_split, load_builtin_task

    check_data_options(args, "regression")
    train, eval_, test = load_builtin_task(args, log)
    if args.max_train_examples is not None and args.max_train_examples < len(train):
        _, chosen = held_out_split(len(train), args.max_train_examples / len(train), args.seed, args.task)
        log(f"training on {len(chosen)} of {len(train)} pairs (--max-train-examples)")
        train = train.subset(chosen)
    return train, eval_, test


def run_regression(args, comm) -> int:
    from minibert.commands.finetune_setup import (best_model_saver, data_source, load_checked_tokenizer, log_recipe,
                                                  make_log, max_length_line, model_to_finetune, run_summary,
                                                  setup_training, splits_of_this_rank, write_summary)
    from minibert.finetune.similarity_metrics import format_similarity_report, similarity_metrics
    from minibert.finetune.train import encode_examples, evaluation, fit, predict_logits

    started = time.perf_counter()
    log = make_log(args)
    train, eval_, test = _prepare_scored(args, log)
    checkpoint, tokenizer_dir, config, settings, out = setup_training(args, "regression", len(train))
    if args.baseline:
        from minibert.finetune.baseline import _import_sklearn
        _import_sklearn()

    log(f"data: {data_source(args)}: {len(train)} train / {len(eval_)} eval / {len(test)} test sentence pairs, "
        f"scores 0-5")
    log(f"model: {checkpoint}")
    log(max_length_line(args, config, checkpoint, settings, "regression"))
    log_recipe(settings, log)
    tokenizer = load_checked_tokenizer(tokenizer_dir, config, checkpoint)
    model = model_to_finetune(checkpoint, ["score"], args, settings, log)
    model.config.extra["problem_type"] = "regression"  # one output, mean squared error (as transformers)
    pad_id = tokenizer.pad_token_id
    splits = splits_of_this_rank(comm, train, eval_, test)  # (rank 0 alone evaluates and tests)
    encoded = {name: encode_examples(tokenizer, data.examples(), settings.max_length, settings.progress)
               for name, data in splits.items()}
    targets = train.scores.astype(model.dtype)  # (N,)
    steps = -(-len(train) // settings.batch_size) * settings.epochs
    log(f"training: {counted(steps, 'optimizer step')}")

    def evaluate(name, desc="evaluating"):
        predicted = predict_logits(model, encoded[name], pad_id, progress=settings.progress, desc=desc)[:, 0]  # (N,)
        metrics = similarity_metrics(predicted, splits[name].scores)
        metrics["loss"] = metrics["mse"]
        return metrics

    record = {"task_type": "regression", "max_length": settings.max_length, "text_pairs": True}
    result = fit(model, encoded["train"], lambda chosen, T: {"labels": targets[chosen]}, lambda: evaluate("eval"),
                 settings, pad_id, headline=("spearman", "pearson"),
                 on_best=best_model_saver(args, out, tokenizer, comm, record), log=log, comm=comm)
    if not comm.is_root:  # (--procs: rank 0 tests, reports and writes)
        return 0
    summary = run_summary(args, "regression", checkpoint, out, settings, result,
                          {"num_train": len(train), "num_eval": len(eval_), "num_test": len(test)},
                          processes=comm.size)
    with evaluation(comm):
        summary["test"] = evaluate("test", "testing")
    summary["reported_split"] = "test"
    log(f"\nbest epoch {result['best_epoch']}, test split: {format_similarity_report(summary['test'])}")
    if args.baseline:
        from minibert.finetune.similarity_baseline import similarity_baselines
        summary["baseline"] = similarity_baselines(train, eval_, test, checkpoint, settings.max_length, log)
        for name in ("tfidf_cosine", "zero_shot_cosine"):
            log(f"test Spearman: BERT {summary['test']['spearman']:.4f}  vs  {name.replace('_', ' ')} "
                f"{summary['baseline'][name]['test']['spearman']:.4f}")
    write_summary(args, out, summary, started, log)
    return 0
