"""minibert finetune --task-type tokens: fine-tune a word tagger (NER) on CoNLL or JSONL files.

Every data check (file format, tags, eval tags the training data never had) happens before the model loads.
The best epoch by entity-level F1 is kept in --out with metrics.json (per-type and micro precision, recall, F1
and token accuracy on eval, and on --test when given).
"""

from __future__ import annotations

import math
import time

import numpy as np

from minibert._plural import counted


def _prepare_tagged(args, log):
    """(train, eval, test or None, tag names): every data check, before any model is loaded."""
    from minibert.commands.finetune_setup import check_data_options, data_source, held_out_split, load_builtin_task
    from minibert.finetune.ner_data import TaggedSentences, build_tag_names, check_tags_known

    eval_split = check_data_options(args, "tokens")
    if args.task:
        train, eval_, test = load_builtin_task(args, log)
    else:
        train, eval_, test = _read_tagged_files(args, eval_split)
    if args.max_train_examples is not None and args.max_train_examples < len(train):
        _, chosen = held_out_split(len(train), args.max_train_examples / len(train), args.seed, data_source(args))
        log(f"training on {len(chosen)} of {len(train)} sentences (--max-train-examples)")
        train = TaggedSentences([train.words[i] for i in chosen], [train.tags[i] for i in chosen], train.source)
    tag_names = build_tag_names(train)
    for other in (eval_, test):
        if other is not None:
            if other.tags is None:
                raise ValueError(f"{other.source}: the sentences have no tags; an eval or test file needs them")
            check_tags_known(other, tag_names, f"the training data ({data_source(args)})")
    return train, eval_, test, tag_names


def _read_tagged_files(args, eval_split):
    """(train, eval, test or None) of --train, --eval (or a held-out part of --train) and --test."""
    from minibert.commands.finetune_setup import held_out_split
    from minibert.finetune.ner_data import TaggedSentences, read_tagged

    train = read_tagged(args.train)
    if train.tags is None:
        raise ValueError(f"{args.train}: the sentences have no tags; a training file needs them")
    if args.eval:
        eval_ = read_tagged(args.eval)
    else:
        keep, held = held_out_split(len(train), eval_split, args.seed, args.train)
        pick = lambda idx, name: TaggedSentences([train.words[i] for i in idx], [train.tags[i] for i in idx],  # noqa: E731
                                                 f"{args.train} ({name})")
        train, eval_ = pick(keep, "train part"), pick(held, "held-out eval part")
    test = read_tagged(args.test) if args.test else None
    return train, eval_, test


def _check_words_fit(args, prepared, settings, tokenizer):
    """Some word of every data set gets a token within --max-length: training data without one would train on
    no label at all (its loss, a mean over no labelled token, would read 0), eval data without one would score
    nothing. Cheap: the search ends at the first sentence with a word that fits, normally the first."""
    from minibert.finetune.tagging import any_word_fits

    train, eval_, test, _ = prepared
    for data, use in ((train, "nothing to learn from"), (eval_, "nothing to score"), (test, "nothing to score")):
        if data is not None and not any_word_fits(tokenizer, data, settings.max_length):
            raise ValueError(f"{data.source}: no word fits in --max-length {settings.max_length} tokens beside "
                             f"[CLS] and [SEP] (each sentence's first word has more pieces), so there is {use}; "
                             f"raise --max-length")


def run_tokens(args, comm) -> int:
    from minibert.commands.finetune_setup import (best_model_saver, data_source, load_checked_tokenizer, log_recipe,
                                                  make_log, max_length_line, model_to_finetune, run_summary,
                                                  setup_training, splits_of_this_rank, write_summary)
    from minibert.finetune.ner_metrics import format_entity_report
    from minibert.finetune.tagging import encode_tagged, evaluate_tagger, padded_labels
    from minibert.layers.loss import IGNORE_INDEX
    from minibert.finetune.train import evaluation, fit
    from minibert.models.token_classification import BertForTokenClassification

    started = time.perf_counter()
    log = make_log(args)
    train, eval_, test, tag_names = prepared = _prepare_tagged(args, log)
    checkpoint, tokenizer_dir, config, settings, out = setup_training(args, "tokens", len(train))

    if args.baseline:
        from minibert.finetune.tagger_baseline import import_tagger
        import_tagger()
    log(f"data: {data_source(args)}: {len(train)} train / {len(eval_)} eval{f' / {len(test)} test' if test else ''} "
        f"sentences; tags: {', '.join(tag_names)}")
    log(f"model: {checkpoint}")
    log(max_length_line(args, config, checkpoint, settings, "tokens"))
    log_recipe(settings, log)
    tokenizer = load_checked_tokenizer(tokenizer_dir, config, checkpoint)
    _check_words_fit(args, prepared, settings, tokenizer)
    model = model_to_finetune(checkpoint, tag_names, args, settings, log, cls=BertForTokenClassification)
    tag2id, pad_id = model.label2id, tokenizer.pad_token_id
    encoded = {name: encode_tagged(tokenizer, data, tag2id, settings.max_length)  # (rank 0 alone evaluates and tests)
               for name, data in splits_of_this_rank(comm, train, eval_, test).items()}
    for name, enc in encoded.items():
        if enc.cut_words:  # (training: no label to learn from; eval and test: no prediction, so scored as 'O')
            effect = ("they get no label, so training does not learn from them" if name == "train" else
                      "the model never sees them, so they count as predicted 'O' in the scores")
            log(f"note: {enc.cut_words} {name} words lie beyond --max-length {settings.max_length} tokens (or have "
                f"no token at all): {effect}")
    steps = math.ceil(len(train) / settings.batch_size) * settings.epochs
    log(f"training: {counted(steps, 'optimizer step')}")

    def evaluate(name, desc="evaluating"):
        data = {"eval": eval_, "test": test}[name]
        return evaluate_tagger(model, encoded[name], data, pad_id, progress=settings.progress, desc=desc)

    train_labels = encoded["train"].labels
    labelled = np.array([int((y != IGNORE_INDEX).sum()) for y in train_labels])  # (N,) the loss's terms
    result = fit(model, encoded["train"].encoded, lambda chosen, T: {"labels": padded_labels(train_labels, chosen, T)},
                 lambda: evaluate("eval"), settings, pad_id, headline=("f1", "token_accuracy"),
                 on_best=best_model_saver(args, out, tokenizer, comm,
                                          {"task_type": "tokens", "max_length": settings.max_length}),
                 log=log, comm=comm,
                 loss_terms=lambda chosen: int(labelled[chosen].sum()))  # (the loss: a mean over labelled tokens)
    if not comm.is_root:  # (--procs: rank 0 tests, reports and writes)
        return 0
    summary = run_summary(args, "tokens", checkpoint, out, settings, result,
                          {"num_train": len(train), "num_eval": len(eval_),
                           "num_test": len(test) if test is not None else None}, labels=tag_names,
                          processes=comm.size)
    if test is not None:
        with evaluation(comm):
            summary["test"] = evaluate("test", "testing")
    split = "test" if test is not None else "eval"
    summary["reported_split"] = split
    log(f"\nbest epoch {result['best_epoch']}, {split} split ({counted(summary[split]['num_sentences'], 'sentence')}), "
        f"entity-level scores (exact span and type):")
    log(format_entity_report(summary[split]))
    if args.baseline:
        from minibert.finetune.tagger_baseline import tagger_baseline
        log("\ntraining the feature tagger baseline on the same split ...")
        summary["baseline"] = tagger_baseline(train, eval_, test, log=log)
        base = summary["baseline"][split]
        log(f"{split} entity F1: BERT {summary[split]['f1']:.4f}  vs  {summary['baseline']['method']} "
            f"{base['f1']:.4f}")
    write_summary(args, out, summary, started, log)
    return 0
