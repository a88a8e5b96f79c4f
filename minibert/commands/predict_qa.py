"""minibert predict on a question answering model: the answer to --question in --context (or --context-file),
as the text span widened to whole words (as Hugging Face's pipeline does by default, align_to_words) with its
score (start + end logit, not a probability), and with --json its character offsets and the "no answer"
([CLS]) score, which a SQuAD 2.0 model raises above every span when the context holds no answer."""

from __future__ import annotations

import json
import sys


def run_answer(args, checkpoint, tokenizer_dir, config) -> int:
    from minibert.commands.finetune_setup import checked_max_length
    from minibert.finetune.loading import finetuning_record, load_classifier, load_tokenizer
    from minibert.finetune.qa_features import default_doc_stride, windows_of
    from minibert.finetune.qa_predict import DEFAULT_MAX_ANSWER_LENGTH, answer_questions
    from minibert.finetune.squad_data import QAExample
    from minibert.io.atomic import read_text_file
    from minibert.models.question_answering import BertForQuestionAnswering

    if args.texts or args.input:
        raise ValueError("a question answering model takes --question and --context (or --context-file), not texts")
    if args.output:
        raise ValueError("--output: a question answering model prints its answers (add --json for JSON)")
    columns = [flag for flag, value in (("--text-column", args.text_column), ("--label-column", args.label_column),
                                        ("--text-pair-column", args.text_pair_column)) if value is not None]
    if columns:
        raise ValueError(f"{'/'.join(columns)}: a question answering model reads no --input file; give --question "
                         f"and --context")
    if not args.question or not args.question.strip():
        raise ValueError("give the question with --question TEXT")
    if (args.context is None) == (args.context_file is None):
        raise ValueError("give the context with --context TEXT or --context-file FILE (one of the two)")
    context = args.context if args.context is not None else read_text_file(args.context_file, "--context-file")
    where = f"--context-file {args.context_file}" if args.context is None else "--context"  # (for messages)
    if not context.strip():
        raise ValueError(f"{where}: the context is empty: give the text that holds the answer")
    for name, value in (("--max-answer-length", args.max_answer_length), ("--top-k", args.top_k)):
        if value is not None and value < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")
    if args.doc_stride is not None and args.doc_stride < 0:
        raise ValueError(f"--doc-stride must be >= 0, got {args.doc_stride}")
    record = finetuning_record(config)  # (the windows and answers of the fine-tuning's evaluation, by default)
    from minibert.commands.finetune_setup import MIN_MAX_LENGTH
    max_length = checked_max_length(args, config, default=384, minimum=MIN_MAX_LENGTH["qa"][0], task_type="qa")
    tokenizer = load_tokenizer(tokenizer_dir)
    example = QAExample("question", args.question, context)
    if args.doc_stride is not None:
        stride = args.doc_stride
    elif "doc_stride" in record and max_length == record.get("max_length"):  # the fine-tuning's windows
        stride = record["doc_stride"]
    else:
        stride = default_doc_stride(max_length)
    windows = windows_of(tokenizer, args.question, context, max_length, stride,
                         where="--question")  # a question too long for the window fails before the weights load
    if not any(o is not None for o in windows[0].context_offsets):  # (e.g. only control characters: no token)
        raise ValueError(f"{where}: the context has no token to answer with")
    max_answer_length = (args.max_answer_length or record.get("max_answer_length")
                         or DEFAULT_MAX_ANSWER_LENGTH)  # (0 is refused above)
    model = load_classifier(checkpoint, log=lambda m: print(m, file=sys.stderr), cls=BertForQuestionAnswering,
                            config=config)
    results, _ = answer_questions(model, [example], windows, tokenizer.pad_token_id, max_answer_length,
                                  k=args.top_k or 1, workers=args.workers, align_to_words=True)
    answers, null_score = results[0]["answers"], results[0]["null_score"]
    # A model fine-tuned on SQuAD 2.0 says "no answer" by scoring [CLS] above every span.
    no_answer = not answers or null_score > answers[0]["score"]
    if args.json:
        print(json.dumps({"question": args.question, "answers": answers, "null_score": null_score,
                          "no_answer_scores_higher": no_answer}, ensure_ascii=False))
    else:
        for a in answers:
            print(f"{a['text']}\t{a['score']:.3f}")
        # (one fine-tuned on v1.1 data, as config.json records it, was never taught to: its answer stands)
        if no_answer and not (answers and record.get("squad_version") == "1.1"):
            print(f"note: the no-answer score ({null_score:.3f}) is higher than every span's: a model fine-tuned on "
                  f"SQuAD 2.0 means 'no answer in the context'", file=sys.stderr)
    return 0
