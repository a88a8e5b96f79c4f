"""minibert predict: classify texts with a fine-tuned model (labels and probabilities); or, with a word tagger,
tag the words of texts (predict_tokens.py); or, with a question answering model, answer a question from a
context (predict_qa.py). The kind of model is read from its config.json unless --task-type says it.

Texts come as arguments or from a CSV/TSV/JSONL file; results go to a file (its extension picks the format) or
stdout. With --label-column the file's true labels are compared with the predictions (accuracy, macro-F1).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from pathlib import Path

from minibert.commands.finetune_setup import checked_max_length


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.description = "Classify texts, tag their words, or answer a question, with a model fine-tuned by " \
                         "'minibert finetune' (or a Hugging Face BertForSequenceClassification, " \
                         "BertForTokenClassification or BertForQuestionAnswering folder)."
    parser.epilog = """examples:
  minibert predict --model runs/drugs "This drug changed my life." "Terrible side effects."
  minibert predict --model runs/drugs --input reviews.csv --text-column review --output predictions.csv
  minibert predict --model runs/drugs --input test.jsonl --label-column label     # also scores the predictions
  minibert predict --model runs/ner "Anna Schmidt moved to Buenos Aires."             # words with their tags
  minibert predict --model runs/ner --json "Anna Schmidt moved to Buenos Aires."      # entities as spans
  minibert predict --model runs/squad --question "Where was Anna born?" --context "Anna was born in Oslo."

output: one row per text with the predicted label, its probability (score) and the probability of every class
(columns prob_<label> in CSV/TSV, an object "probabilities" in JSONL). A QA model prints its answers (widened
to whole words) with their score: the span's start logit + end logit, not a probability (higher is better; the
scores of one question's answers compare, those of different questions do not)."""
    parser.add_argument("texts", nargs="*", metavar="TEXT", help="texts to classify (or use --input)")
    parser.add_argument("--model", required=True, metavar="DIR", help="fine-tuned model folder (config.json with "
                        "id2label, model.safetensors, vocab.txt)")
    parser.add_argument("--input", metavar="FILE", help="a .csv, .tsv or .jsonl file of texts")
    parser.add_argument("--text-column", metavar="COL", help="column of --input's texts (default: text)")
    parser.add_argument("--text-pair-column", metavar="COL", help="column of the second text, for pair models")
    parser.add_argument("--label-column", metavar="COL",
                        help="column of true labels: report accuracy and macro-F1 of the predictions")
    parser.add_argument("--output", metavar="FILE", help="write .csv, .tsv or .jsonl here instead of stdout")
    parser.add_argument("--json", action="store_true", help="stdout as JSON lines instead of a table")
    parser.add_argument("--batch-size", type=int, default=32, help="texts per forward pass (default 32)")
    parser.add_argument("--workers", type=int, default=None,
                        help="batches run at once, each on its own thread and core (default: the cores, at most 4; "
                             "1 when OPENBLAS_NUM_THREADS=1); each holds its own activations, so memory grows with it")
    parser.add_argument("--max-length", type=int, default=None,
                        help="tokens per text, longer ones truncated (default: the length the model was fine-tuned "
                             "with, which 'minibert finetune' records in its config.json; for a folder without that "
                             "record 128 for a text classifier, 512 for a word tagger, 384 for a QA model's "
                             "windows; at most the model's limit)")
    parser.add_argument("--long-texts", choices=("truncate", "windows", "head-tail"), default=None,
                        help="a text classifier's texts longer than --max-length: cut, read whole as overlapping "
                             "windows whose logits are averaged, or read as their head and tail (default: as the "
                             "model was fine-tuned, recorded in its config.json, else truncate)")
    parser.add_argument("--window-overlap", type=int, default=None, metavar="N",
                        help="tokens that neighbouring windows share (default: the fine-tuning's, else a quarter of "
                             "--max-length)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--task-type", choices=("auto", "sequence", "tokens", "qa"), default="auto",
                        help="what the model does (default auto: from config.json's architectures; a type that "
                             "contradicts them is refused)")
    qa = parser.add_argument_group("question answering")
    qa.add_argument("--question", metavar="TEXT", help="the question (a QA model)")
    qa.add_argument("--context", metavar="TEXT", help="the text that holds the answer (a QA model)")
    qa.add_argument("--context-file", metavar="FILE", help="read the context from a UTF-8 text file")
    qa.add_argument("--max-answer-length", type=int, default=None, metavar="N",
                    help="longest answer considered, in tokens (default: the fine-tuning's, recorded in config.json, "
                         "else 30)")
    qa.add_argument("--doc-stride", type=int, default=None, metavar="N",
                    help="overlap in tokens of the windows a long context is cut into (default: the fine-tuning's, "
                         "recorded in config.json, else min(128, a third of --max-length))")
    qa.add_argument("--top-k", type=int, default=None, metavar="K",
                    help="print the K best answers with their scores, start + end logit (default 1)")


def _records(examples, label_names, probs, true_labels):
    records = []
    for i, p in enumerate(probs):
        best = int(p.argmax())
        record = {"text": examples.texts[i]}
        if examples.text_pairs is not None:
            record["text_pair"] = examples.text_pairs[i]
        if true_labels is not None:
            record["true_label"] = true_labels[i]
        record.update(label=label_names[best], score=float(p[best]),
                      probabilities={name: float(p[c]) for c, name in enumerate(label_names)})
        records.append(record)
    return records


def _write_table(records, label_names, delimiter) -> str:
    out = io.StringIO()
    columns = [c for c in ("text", "text_pair", "true_label") if c in records[0]] + ["label", "score"]
    writer = csv.writer(out, delimiter=delimiter, lineterminator="\n")
    writer.writerow(columns + [f"prob_{name}" for name in label_names])
    for r in records:
        writer.writerow([r[c] for c in columns[:-1]] + [f"{r['score']:.6f}"] +
                        [f"{r['probabilities'][name]:.6f}" for name in label_names])
    return out.getvalue()


def _write_jsonl(records) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def _pairs_note(args, config, pairs: bool) -> str | None:
    """A note when the texts are read otherwise than the model was fine-tuned on them (pairs, or single texts;
    as config.json records it): the predictions are then of inputs it never saw, though nothing fails."""
    from minibert.finetune.loading import finetuning_record

    trained_on_pairs = finetuning_record(config).get("text_pairs")
    if trained_on_pairs and not pairs:
        how = "add --text-pair-column COL" if args.input else "give them with --input FILE --text-pair-column COL"
        return (f"note: {args.model} was fine-tuned on text pairs, but each text here is read alone: {how} to "
                f"classify pairs")
    if trained_on_pairs is False and pairs:
        return (f"note: {args.model} was fine-tuned on single texts, but --text-pair-column adds a second text to "
                f"each")
    return None


def _long_texts(args, config, max_length: int, pairs: bool) -> tuple[str, int]:
    """(truncate, windows or head-tail, the windows' overlap): --long-texts and --window-overlap, else what the
    fine-tuning recorded in config.json (finetune/windows.py, head_tail.py). Text pairs are always truncated."""
    from minibert.finetune.loading import finetuning_record
    from minibert.finetune.windows import check_window_overlap

    record = finetuning_record(config)
    long_texts = args.long_texts or record.get("long_texts") or "truncate"
    if long_texts in ("windows", "head-tail") and pairs:
        if args.long_texts:
            raise ValueError(f"--long-texts {long_texts} cuts single texts; text pairs are truncated, longest first")
        long_texts = "truncate"
    overlap = args.window_overlap
    if overlap is None:
        recorded = record.get("window_overlap")
        fits = isinstance(recorded, int) and record.get("max_length") == max_length
        overlap = recorded if fits else max_length // 4
    check_window_overlap(overlap, max_length)
    return long_texts, overlap


HEADS = {"sequence": "text classifier", "tokens": "word tagger", "qa": "question answering model"}


def _task_type(args, config) -> str:
    """What config.json's architectures say the model is; --task-type may say it for a checkpoint that does not
    tell (a head's weights fit another head of the same shape, so a mismatch would predict nonsense silently)."""
    architectures = config.extra.get("architectures") or []
    suffixes = {"ForSequenceClassification": "sequence", "ForTokenClassification": "tokens",
                "ForQuestionAnswering": "qa"}
    found = [(a, task) for a in architectures for suffix, task in suffixes.items() if a.endswith(suffix)]
    architecture, head = found[0] if found else (None, None)
    if args.task_type == "auto":
        return head or "sequence"
    if head is not None and head != args.task_type:
        raise ValueError(f"--task-type {args.task_type}: {args.model} is a {HEADS[head]} ({architecture} in "
                         f"its config.json), not a {HEADS[args.task_type]}; leave out --task-type")
    return args.task_type


def run(args) -> int:
    from minibert.config import BertConfig
    from minibert.finetune.data import Examples, check_labels_known, check_rows_file, file_format, label_ids, \
        load_examples
    from minibert.finetune.loading import load_classifier, load_tokenizer
    from minibert.finetune.metrics import classification_metrics, format_report
    from minibert.finetune.model_source import resolve_model
    from minibert.finetune.train import encode_examples, predict_logits, softmax
    from minibert.io.atomic import atomic_write_text, check_output_file

    if args.workers is not None and args.workers < 1:
        raise ValueError(f"--workers must be at least 1, got {args.workers}")
    # The model folder, its tokenizer and config.json: once, for every kind of model and check below
    checkpoint, tokenizer_dir = resolve_model(args.model)
    config = BertConfig.from_json_file(checkpoint)
    task_type = _task_type(args, config)
    windows_given = [flag for flag, value in (("--long-texts", args.long_texts),
                                              ("--window-overlap", args.window_overlap)) if value is not None]
    if windows_given and task_type != "sequence":
        raise ValueError(f"{'/'.join(windows_given)}: for text classifiers; {args.model} is a {HEADS[task_type]}")
    if task_type == "qa":
        from minibert.commands.predict_qa import run_answer
        return run_answer(args, checkpoint, tokenizer_dir, config)
    if args.question or args.context or args.context_file:
        raise ValueError(f"--question/--context are for question answering models; {args.model} is a "
                         f"{HEADS[task_type]}")
    qa_only = [flag for flag, value in (("--doc-stride", args.doc_stride), ("--max-answer-length",
                                        args.max_answer_length), ("--top-k", args.top_k)) if value is not None]
    if qa_only:  # (ignored otherwise: one line rather than silence)
        raise ValueError(f"{'/'.join(qa_only)}: for question answering models; {args.model} is a "
                         f"{HEADS[task_type]}")
    if args.text_column is not None and not args.input:
        raise ValueError("--text-column names the column of --input FILE; texts given as arguments have none")
    if args.output:  # a folder, an unwritable place or the input file fail now, not after the work
        check_output_file(args.output, "--output", {"--input": args.input})
    if task_type == "tokens":
        if bool(args.texts) == bool(args.input):
            raise ValueError("give texts as arguments or --input FILE (one of the two)")
        if args.label_column or args.text_pair_column:
            raise ValueError("--label-column and --text-pair-column are for text classifiers; score a tagger with "
                             "'minibert finetune --task-type tokens --eval FILE'")
        if args.output:
            try:
                fmt = file_format(Path(args.output))
            except ValueError:
                fmt = None
            if fmt != "jsonl":
                raise ValueError(f"--output {args.output}: a tagger writes JSONL (one object per text); use .jsonl")
        if args.input:
            check_rows_file(args.input, "--input")  # (its errors name --input; load_examples' name the file only)
        texts = load_examples(args.input, args.text_column or "text").texts if args.input else list(args.texts)
        from minibert.commands.predict_tokens import run_tag
        return run_tag(args, checkpoint, tokenizer_dir, config, texts)

    # ---- checks first
    if bool(args.texts) == bool(args.input):
        raise ValueError("give texts as arguments or --input FILE (one of the two)")
    if args.batch_size < 1:
        raise ValueError(f"--batch-size must be at least 1, got {args.batch_size}")
    if args.output:
        file_format(Path(args.output), "--output")  # an unknown extension fails now, not after the work
    if args.input:
        check_rows_file(args.input, "--input")  # (its errors name --input; load_examples' name the file only)
        examples = load_examples(args.input, args.text_column or "text", args.label_column, args.text_pair_column)
    else:
        if args.label_column or args.text_pair_column:
            raise ValueError("--label-column and --text-pair-column need --input FILE")
        examples = Examples(list(args.texts), source="arguments")
    # [CLS] text [SEP] (and pair [SEP]): fewer tokens than fine-tuning allows leave no room for the text
    from minibert.commands.finetune_setup import MIN_MAX_LENGTH
    minimum = MIN_MAX_LENGTH["pairs" if examples.text_pairs is not None else "sequence"][0]
    max_length = checked_max_length(args, config, default=128, minimum=minimum, task_type="sequence")
    note = _pairs_note(args, config, examples.text_pairs is not None)
    if note:
        print(note, file=sys.stderr)
    model = load_classifier(checkpoint, log=lambda m: print(m, file=sys.stderr), config=config)
    label_names = [model.id2label[i] for i in range(model.num_labels)]
    regression = model.problem_type == "regression"  # (a similarity model, `finetune --task stsb`: one score)
    if regression and examples.labels is not None:
        raise ValueError(f"{args.model} predicts a score (a regression), not a label: leave out --label-column")
    if examples.labels is not None:
        check_labels_known(examples, model.label2id, f"the model's labels ({checkpoint / 'config.json'})")
    tokenizer = load_tokenizer(tokenizer_dir)

    # ---- predict
    long_texts, overlap = _long_texts(args, config, max_length, examples.text_pairs is not None)
    if long_texts == "windows":
        from minibert.finetune.windows import encode_windows, pool_windows
        encoded, owner = encode_windows(tokenizer, examples, max_length, overlap, progress=not args.no_progress)
    elif long_texts == "head-tail":
        from minibert.finetune.head_tail import encode_head_tail
        encoded = encode_head_tail(tokenizer, examples, max_length, progress=not args.no_progress)
    else:
        encoded = encode_examples(tokenizer, examples, max_length, progress=not args.no_progress)
    logits = predict_logits(model, encoded, tokenizer.pad_token_id, args.batch_size,
                            progress=not args.no_progress and len(encoded) > args.batch_size, desc="predicting",
                            workers=args.workers)
    if long_texts == "windows":
        logits = pool_windows(logits, owner, len(examples))  # (N, C) the mean over each text's windows
    probs = softmax(logits.astype("float64"))  # (N, C)
    records = _records(examples, label_names, probs, examples.labels)
    if regression:  # the one output is the score itself
        label_names = []
        for record, value in zip(records, logits[:, 0]):
            record.update(label="score", score=float(value), probabilities={})

    # ---- write
    if args.output:
        fmt = file_format(Path(args.output))
        text = _write_jsonl(records) if fmt == "jsonl" else _write_table(records, label_names,
                                                                        "," if fmt == "csv" else "\t")
        atomic_write_text(args.output, text)
        print(f"wrote {len(records)} predictions to {args.output}", file=sys.stderr)
    elif args.json:
        sys.stdout.write(_write_jsonl(records))
    else:
        for r in records:
            shown = r["text"] if len(r["text"]) <= 80 else r["text"][:77] + "..."
            print(f"{r['label']}\t{r['score']:.3f}\t{shown}")
    if examples.labels is not None:
        metrics = classification_metrics(label_ids(examples, model.label2id), probs.argmax(axis=1), label_names)
        print(format_report(metrics), file=sys.stderr)
    return 0
