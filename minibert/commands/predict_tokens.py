"""minibert predict on a word tagger (BertForTokenClassification): each text's words with their tags, or with
--json its entities as character spans of the text."""

from __future__ import annotations

import json
import sys


def run_tag(args, checkpoint, tokenizer_dir, config, texts: list[str]) -> int:
    from minibert.commands.finetune_setup import MIN_MAX_LENGTH
    from minibert.commands.finetune_setup import checked_max_length
    from minibert.finetune.loading import load_classifier, load_tokenizer
    from minibert.finetune.tag_text import tag_texts
    from minibert.io.atomic import atomic_write_text
    from minibert.models.token_classification import BertForTokenClassification

    max_length = checked_max_length(args, config, default=512, minimum=MIN_MAX_LENGTH["tokens"][0],
                                    task_type="tokens")
    model = load_classifier(checkpoint, log=lambda m: print(m, file=sys.stderr), cls=BertForTokenClassification,
                            config=config)
    tokenizer = load_tokenizer(tokenizer_dir)
    records = tag_texts(model, tokenizer, texts, max_length, args.batch_size,
                        progress=not args.no_progress and len(texts) > args.batch_size, workers=args.workers)
    # Words past --max-length tokens get no token, so no tag: say so, rather than print a shorter text silently.
    # (Cut means more pieces than fit beside [CLS] and [SEP]; text after the last tagged word may also be
    # characters that make no token at all, such as a soft hyphen.)
    cut = [(i, r["words"][-1]["end"] if r["words"] else 0) for i, r in enumerate(records)
           if len(tokenizer.tokenize(r["text"])) > max_length - 2]
    if cut:
        which = ", ".join(f"text {i + 1} after character {end}" for i, end in cut[:5])
        which += " ..." if len(cut) > 5 else ""
        print(f"note: {len(cut)} text{'s are' if len(cut) > 1 else ' is'} longer than --max-length {max_length} "
              f"tokens: the words past it are not tagged ({which})", file=sys.stderr)
    if args.output:
        atomic_write_text(args.output, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
        print(f"wrote {len(records)} tagged texts to {args.output}", file=sys.stderr)
    elif args.json:
        for r in records:
            print(json.dumps({"text": r["text"], "entities": r["entities"]}, ensure_ascii=False))
    else:
        for r in records:  # word/TAG, the CoNLL habit; O words plain, so the entities stand out
            print(" ".join(w["word"] if w["tag"] == "O" else f"{w['word']}/{w['tag']}" for w in r["words"]))
    return 0
