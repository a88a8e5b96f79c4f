"""`minibert distill`: distil a BERT (teacher) into a smaller DistilBERT (student), on the CPU."""

from __future__ import annotations

import argparse

from minibert._plural import counted
from minibert.commands import pretrain as pretrain_command
from minibert.distill.settings import DistillSettings

D = DistillSettings()
# Pre-training's options a distillation has no use for, and why (the refusal says it).
_SIZE = "a student's size and tokenizer come from its --teacher (and --student-layers)"
_OBJECTIVE = "a student learns by matching its --teacher (--mode and the --alpha-* weights say how)"
NOT_FOR_DISTILL = {"config": _SIZE, "tokenizer": _SIZE, "vocab_size": _SIZE, "objective": _OBJECTIVE,
                   "generator_size": _OBJECTIVE, "output_bias": _OBJECTIVE, "short_seq_prob": _OBJECTIVE,
                   "no_examples": "a distillation prints no fill-mask examples",
                   "init": "a distillation's student starts from its teacher's layers (--teacher)"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    pretrain_command.add_arguments(parser, defaults=D)
    for action in parser._actions:  # shared options, minus those above (hidden; refused if given)
        if action.dest in NOT_FOR_DISTILL:
            action.help = argparse.SUPPRESS
        elif action.dest == "name":
            action.help = "run folder name [distil-<teacher>-L<K>-<corpus>-<date>-<time>]"
    parser.description = (
        "Distil a teacher BERT into a smaller DistilBERT student (Sanh et al. 2019): the student takes a subset of "
        "the teacher's layers (every other one, spread evenly) and its embeddings (no token types, no pooler), then "
        "trains on a corpus to match the teacher. A teacher with an MLM head: soft-target loss at temperature T on "
        "the masked tokens + the student's own MLM loss + cosine loss on the hidden states (DistilBERT's recipe). A "
        "teacher without one (all-MiniLM-L6-v2, a sentence-embedding model): cosine loss on the token states and on "
        "the mean-pooled sentence embeddings (and MSE, if asked). Run folder, --minutes/--steps budget, checkpoints "
        "(Hugging Face DistilBERT folders), exact --resume and metrics.jsonl work as in 'minibert pretrain'.")
    parser.epilog = ("Examples:  minibert distill --teacher minilm --student-layers 3 --minutes 30   |   "
                     "minibert distill --teacher runs/mini-wiki-20250101-120000 --steps 2000   |   "
                     "minibert distill --resume runs/distil-minilm-L3-wiki-....  The student then works in "
                     "embed, similarity, finetune, predict and attention (see docs/distillation.md).")
    g = parser.add_argument_group("distillation")
    g.add_argument("--teacher", default=None,
                   help=f"the teacher: a BERT checkpoint folder, a pre-training run folder, or 'minilm' [{D.teacher}]")
    g.add_argument("--student-layers", type=int, metavar="K", default=None,
                   help="layers of the student [half the teacher's, rounded up]")
    g.add_argument("--teacher-layers", metavar="I,J,..", default=None,
                   help="the teacher layers (0-based) the student's start from [K spread evenly over the teacher's, "
                        "first and last included: 6 -> 3 takes 0,2,5]")
    g.add_argument("--mode", choices=("mlm", "hidden"), default=None,
                   help="mlm: DistilBERT's losses (needs a teacher MLM head); hidden: match hidden states only "
                        "[mlm when the teacher has an MLM head]")
    g.add_argument("--temperature", type=float, metavar="T", default=None,
                   help=f"softmax temperature of the soft targets [{D.temperature}]")
    for name, what in (("ce", "soft-target loss vs the teacher's MLM distribution [mlm: 5]"),
                       ("mlm", "student's own MLM loss [mlm: 2]"),
                       ("cos", "cosine loss between student and teacher token states [1]"),
                       ("mse", "mean squared error between the token states [0]"),
                       ("pool", "cosine loss between the mean-pooled sentence embeddings [mlm: 0, hidden: 1]")):
        g.add_argument(f"--alpha-{name}", type=float, metavar="X", default=None, help=f"weight of the {what}")


def _given(args) -> dict:
    given = {k: v for k, v in vars(args).items()
             if k in DistillSettings.__dataclass_fields__ and v is not None and k != "resume"}
    if getattr(args, "beta2", None) is not None:
        given["betas"] = (D.betas[0], args.beta2)
    if isinstance(given.get("teacher_layers"), str):
        try:
            given["teacher_layers"] = [int(x) for x in given["teacher_layers"].split(",") if x.strip()]
        except ValueError:
            raise ValueError(f"--teacher-layers expects comma-separated layer numbers like 0,2,5, got "
                             f"{args.teacher_layers!r}") from None
    return given


def run(args) -> int:
    from minibert.distill.run import distill
    refused = [name for name in NOT_FOR_DISTILL if getattr(args, name, None) not in (None, False)]
    if refused:
        raise ValueError(f"--{refused[0].replace('_', '-')} is a pre-training option: {NOT_FOR_DISTILL[refused[0]]}")
    return pretrain_command.start_or_resume(args, _given(args), DistillSettings, distill,
                                            lambda summary, settings: _print_summary(summary))


def _print_summary(summary: dict) -> None:
    m = summary["eval"]
    print()
    print(pretrain_command.done_line(summary))
    losses = "  ".join(f"{k[:-5]} {v:.4f}" for k, v in sorted(m.items()) if k.endswith("_loss") and k != "mlm_loss")
    print(f"held-out ({counted(summary['eval_sequences'], 'sequence')}): loss {m['loss']:.4f}  {losses}")
    if m.get("masked_tokens"):
        print(f"  student's masked-token accuracy {m['mlm_acc']:.1%}  (perplexity {m['ppl']:,.1f})")
    if summary.get("stopped_early"):
        print(f"note: {summary['stopped_early']}")
    print(f"student: {summary['checkpoint']}")
    print(f'try:     minibert embed --model {summary["run"]} "a sentence to embed"')
