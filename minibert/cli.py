"""The `minibert` command line: one sub-command per module in `minibert/commands/`.

Each command module defines `add_arguments(parser)` and `run(args) -> int`. Modules are imported only when
their command runs, so `minibert --help` is instant and one command's optional dependency (matplotlib,
scikit-learn) never breaks another.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# command -> (module, one-line help). Keep in the order a newcomer meets them.
COMMANDS: dict[str, tuple[str, str]] = {
    "pretrain": ("minibert.commands.pretrain", "pre-train a BERT (MLM, optional NSP) on a corpus"),
    "distill": ("minibert.commands.distill", "distil a BERT into a smaller DistilBERT student (teacher -> student)"),
    "fill-mask": ("minibert.commands.fill_mask", "fill in [MASK] tokens with a trained model"),
    "params": ("minibert.commands.params", "print the parameter table of a config"),
    "shapes": ("minibert.commands.shapes", "print every tensor's shape on a batch's way through the model"),
    "train-tokenizer": ("minibert.commands.train_tokenizer", "train a WordPiece vocabulary on text files"),
    "tokenize": ("minibert.commands.tokenize", "show the WordPiece pieces and ids of a text"),
    "embed": ("minibert.commands.embed", "sentence embeddings (mean pooling) as JSON or .npy"),
    "similarity": ("minibert.commands.similarity", "cosine similarity of two sentences"),
    "finetune": ("minibert.commands.finetune",
                 "fine-tune a text classifier, a word tagger (NER) or an extractive QA model"),
    "bench": ("minibert.commands.bench",
              "fine-tune a model on every built-in task and table its scores beside baselines and BERT-base's"),
    "predict": ("minibert.commands.predict", "classify texts, tag words or answer questions with a fine-tuned model"),
    "attention": ("minibert.commands.attention", "draw attention maps (PNG) or an interactive HTML view"),
    "plot": ("minibert.commands.plot", "plot training curves of a run folder"),
    "embed-plot": ("minibert.commands.embed_plot", "project token embeddings to 2-D and plot them"),
}


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    parser = argparse.ArgumentParser(
        prog="minibert",
        description="BERT from first principles in NumPy: tokenize, pre-train, load checkpoints, fine-tune, "
                    "and look inside.",
        epilog="Run 'minibert COMMAND --help' for a command's options.",
    )
    # required: `minibert` alone is a usage error (status 2), as argparse does for any missing argument
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    subparsers = {}
    for name, (_module, help_text) in COMMANDS.items():
        subparsers[name] = sub.add_parser(name, help=help_text, description=help_text)
    return parser, subparsers


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser, subparsers = build_parser()
    # Only the chosen command's module is imported (and only it adds its options).
    name = next((a for a in argv if not a.startswith("-")), None)
    if name in COMMANDS:
        from minibert._malloc import keep_freed_memory
        keep_freed_memory()  # training and inference re-allocate big temporaries: keep the memory (no page faults)
        module = importlib.import_module(COMMANDS[name][0])
        module.add_arguments(subparsers[name])
    args = parser.parse_args(argv)
    args.argv = list(argv)  # the command as typed: `minibert pretrain --procs N` starts its ranks with it
    from minibert.training.rank_checks import EXPECTED_ERRORS  # (reported in one line, as the ranks report them)
    try:
        from minibert.layers.gelu_select import numba_gelu_loop, numba_setting
        if numba_setting() == "on":  # a bad MINIBERT_NUMBA, or =1 without a working numba, fails before any work
            numba_gelu_loop()
        code = int(module.run(args) or 0)
        sys.stdout.flush()  # (here, so that a closed pipe is met below and not at exit)
        return code
    except BrokenPipeError:  # the reader of our output stopped reading (`minibert params | head`)
        from minibert.training.rank_checks import closed_pipe_status
        return closed_pipe_status()
    except EXPECTED_ERRORS as e:
        # Bad input, a path that cannot be written, or a missing optional package: one clear line, no traceback
        # (MINIBERT_DEBUG=1 shows it). Commands check their paths before the work; this is the safety net.
        import os
        if os.environ.get("MINIBERT_DEBUG"):
            raise
        print(f"minibert {args.command}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"minibert {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
