"""minibert finetune --task-type qa: fine-tune extractive question answering on SQuAD v1.1 / v2.0 files.

Every check (the file's structure, each answer against its context, each question against the window) happens
before the model loads. The best epoch by F1 is kept in --out with metrics.json (exact match and F1 with
SQuAD's normalisation, and for v2.0 data the same split into answerable and unanswerable questions). The log
prints them in percent, as SQuAD's evaluation script does; metrics.json keeps fractions (0-1), as for every task.
"""

from __future__ import annotations

import math
import time

from minibert._plural import counted


def doc_stride(args, max_length: int) -> int:
    """--doc-stride, or min(128, a third of the window)."""
    from minibert.finetune.qa_features import default_doc_stride
    return args.doc_stride if args.doc_stride is not None else default_doc_stride(max_length)


def data_sources(args) -> dict:
    """The file each data set comes from, for messages (a held-out eval split: the --train file)."""
    return {"train": args.train, "eval": args.eval or args.train, "test": args.test}


def _split_by_context(examples, fraction, seed, source):
    """Hold out whole paragraphs, so that no eval context was seen in training."""
    from minibert.commands.finetune_setup import held_out_split

    contexts = list(dict.fromkeys(e.context for e in examples))
    keep, held = held_out_split(len(contexts), fraction, seed, source)
    held_set = {contexts[i] for i in held}
    return [e for e in examples if e.context not in held_set], [e for e in examples if e.context in held_set]


def _prepare_squad(args, log):
    from minibert.commands.finetune_setup import check_data_options
    from minibert.finetune.squad_data import read_squad

    eval_split = check_data_options(args, "qa")
    if args.doc_stride is not None and args.doc_stride < 0:
        raise ValueError(f"--doc-stride must be >= 0, got {args.doc_stride}")
    if args.max_answer_length is not None and args.max_answer_length < 1:
        raise ValueError(f"--max-answer-length must be at least 1, got {args.max_answer_length}")
    train, v2 = read_squad(args.train)
    if args.eval:
        eval_, eval_v2 = read_squad(args.eval)
        v2 = v2 or eval_v2
    else:
        train, eval_ = _split_by_context(train, eval_split, args.seed, args.train)
    test = None
    if args.test:
        test, test_v2 = read_squad(args.test)
        # A run on v1.1 data never predicts "no answer", so every unanswerable test question would score 0: a
        # number that looks like a result and is not. (A v1.1 test in a v2.0 run is fine: a v2.0 model may
        # abstain, as SQuAD 2.0 scores its answerable questions.)
        if test_v2 and not v2:
            raise ValueError(f"--test {args.test} is SQuAD v2.0 (it has unanswerable questions), but --train"
                             f"{'/--eval are' if args.eval else ' is'} v1.1: a model fine-tuned without unanswerable "
                             f"questions never answers 'no answer', so those would all score 0; test on v1.1 data, "
                             f"or fine-tune on v2.0 data")
    if args.max_train_examples is not None and args.max_train_examples < len(train):
        log(f"training on the first {args.max_train_examples} of {len(train)} questions (--max-train-examples)")
        train = train[:args.max_train_examples]
    return train, eval_, test, v2


def _check_windows(args, prepared, settings, tokenizer):
    """Every question of the data leaves its window room for more context than --doc-stride (else the windows
    would never advance). Tokenizes the questions only, which is cheap; the contexts are the ranks' work."""
    from minibert.finetune.qa_features import check_fits, context_room

    L, stride = settings.max_length, doc_stride(args, settings.max_length)
    if context_room(1, L) <= stride:  # not even a question of one token leaves room: say so, not per question
        given = f"--doc-stride {stride}" if args.doc_stride is not None else \
            f"the default --doc-stride {stride} (a third of --max-length {L})"
        raise ValueError(f"{given} leaves the windows no room to advance: [CLS] question [SEP] context [SEP] in "
                         f"{L} tokens holds at most {context_room(1, L)} context tokens, which must be more than "
                         f"the stride; give --doc-stride {max(context_room(1, L) - 1, 0)} or less, or a larger "
                         f"--max-length")
    train, eval_, test, _ = prepared
    sources = data_sources(args)
    for name, examples in (("train", train), ("eval", eval_), ("test", test)):
        for e in examples or []:
            check_fits(tokenizer.encode(e.question, add_special_tokens=False).input_ids, L, stride,
                       f"{sources[name]}: question {e.id}")


def run_qa(args, comm) -> int:
    from minibert.commands.finetune_setup import (best_model_saver, load_checked_tokenizer, log_recipe, make_log,
                                                  max_length_line, model_to_finetune, run_summary, setup_training,
                                                  splits_of_this_rank, write_summary)
    from minibert.finetune.qa_features import build_windows
    from minibert.finetune.qa_predict import DEFAULT_MAX_ANSWER_LENGTH, answer_questions
    from minibert.finetune.squad_metrics import squad_scores
    from minibert.finetune.train import evaluation, fit
    from minibert.models.question_answering import BertForQuestionAnswering

    import numpy as np

    started = time.perf_counter()
    log = make_log(args)
    train, eval_, test, v2 = prepared = _prepare_squad(args, log)
    checkpoint, tokenizer_dir, config, settings, out = setup_training(args, "qa")
    tokenizer = load_checked_tokenizer(tokenizer_dir, config, checkpoint)
    _check_windows(args, prepared, settings, tokenizer)
    L, stride = settings.max_length, doc_stride(args, settings.max_length)
    max_answer_length = (args.max_answer_length if args.max_answer_length is not None else
                         DEFAULT_MAX_ANSWER_LENGTH)
    sources = data_sources(args)
    windows = {name: build_windows(tokenizer, data, L, stride, with_answers=True, source=sources[name])
               for name, data in splits_of_this_rank(comm, train, eval_, test).items()}  # (rank 0 alone evaluates)
    log(f"data: {args.train} (SQuAD {'v2.0, with unanswerable questions' if v2 else 'v1.1'}): {len(train)} train / "
        f"{len(eval_)} eval{f' / {len(test)} test' if test else ''} questions; {len(windows['train'])} training "
        f"windows of up to {L} tokens (stride {stride})")
    log(f"model: {checkpoint}")
    log(max_length_line(args, config, checkpoint, settings, "qa"))
    log_recipe(settings, log)
    model = model_to_finetune(checkpoint, None, args, settings, log, cls=BertForQuestionAnswering)
    pad_id = tokenizer.pad_token_id
    steps = math.ceil(len(windows['train']) / settings.batch_size) * settings.epochs
    log(f"training: {counted(steps, 'optimizer step')}")

    def evaluate(name, desc="evaluating"):
        examples = {"eval": eval_, "test": test}[name]
        results, loss = answer_questions(model, examples, windows[name], pad_id, max_answer_length,
                                         allow_null=v2, progress=settings.progress, desc=desc)
        metrics = squad_scores(examples, [r["text"] for r in results])
        metrics["loss"] = loss
        return metrics

    # what `minibert predict` needs to cut windows and answers as here (and whether "no answer" is an answer)
    record = {"task_type": "qa", "max_length": L, "doc_stride": stride, "max_answer_length": max_answer_length,
              "squad_version": "2.0" if v2 else "1.1"}
    starts = np.array([w.start_position for w in windows["train"]], dtype=np.int64)
    ends = np.array([w.end_position for w in windows["train"]], dtype=np.int64)
    encoded = [(w.input_ids, w.token_type_ids) for w in windows["train"]]
    result = fit(model, encoded, lambda chosen, T: {"start_positions": starts[chosen], "end_positions": ends[chosen]},
                 lambda: evaluate("eval"), settings, pad_id, headline=("exact_match", "f1"), percent=True,
                 on_best=best_model_saver(args, out, tokenizer, comm, record), log=log, comm=comm)
    if not comm.is_root:  # (--procs: rank 0 tests, reports and writes)
        return 0
    summary = run_summary(args, "qa", checkpoint, out, settings, result,
                          {"num_train": len(train), "num_eval": len(eval_),
                           "num_test": len(test) if test is not None else None},
                          squad_version="2.0" if v2 else "1.1", num_train_windows=len(windows["train"]),
                          doc_stride=stride, max_answer_length=max_answer_length, processes=comm.size)
    if test is not None:
        with evaluation(comm):
            summary["test"] = evaluate("test", "testing")
    split = "test" if test is not None else "eval"
    summary["reported_split"] = split
    m = summary[split]
    log(f"\nbest epoch {result['best_epoch']}, {split} split ({counted(m['num_questions'], 'question')}): exact match "
        f"{100 * m['exact_match']:.1f}, F1 {100 * m['f1']:.1f}"
        + (f" (answerable F1 {100 * m.get('has_answer_f1', 0):.1f}, unanswerable {100 * m.get('no_answer_f1', 0):.1f})"
           if v2 else ""))
    write_summary(args, out, summary, started, log)
    return 0
