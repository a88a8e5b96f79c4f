"""`minibert pretrain`: pre-train a BERT on your CPU (masked LM, optionally next-sentence prediction)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from minibert._plural import counted
from minibert.data.examples import OBJECTIVES
from minibert.training.settings import OUTPUT_BIAS_INITS, PACKINGS, PretrainSettings

D = PretrainSettings()  # the defaults, shown in --help


def add_arguments(parser: argparse.ArgumentParser, defaults: PretrainSettings | None = None) -> None:
    """`defaults`: the settings whose values --help shows (`minibert distill` passes its own)."""
    D = defaults if defaults is not None else PretrainSettings()  # noqa: N806  (shadows the module's D on purpose)
    parser.description = (
        "Pre-train a BERT from scratch on a corpus, on the CPU. With no options: the 'mini' model (~3M "
        "parameters) on 10,033 Wikipedia summaries for about 13 minutes (first run: plus a few seconds to train a "
        "tokenizer and tokenize, cached afterwards). Shows a progress bar, evaluates on held-out documents, "
        "writes checkpoints loadable by Hugging Face transformers, and ends by filling in a few [MASK]s.")
    parser.epilog = ("Examples:  minibert pretrain   |   minibert pretrain --corpus ptb --minutes 5   |   "
                     "mpiexec -n 4 minibert pretrain --batch-size 64 (data-parallel, docs/scaling.md)   |   "
                     "minibert pretrain --corpus my_texts/ --objective mlm+nsp --steps 2000   |   "
                     "minibert pretrain --corpus imdb --init runs/mini-wiki-20250101-120000 --minutes 5   |   "
                     "minibert pretrain --resume runs/mini-wiki-20250101-120000.  Metrics: RUN_DIR/metrics.jsonl "
                     "(see docs/pretraining.md).")
    data = parser.add_argument_group("data")
    data.add_argument("--corpus", nargs="+", metavar="CORPUS", default=None,
                      help=f"'wiki' (Wikipedia summaries), 'ptb' (Penn Treebank), 'wikitext2' (WikiText-2's train "
                           f"articles), 'imdb' (the IMDB split's train reviews; docs/continued_pretraining.md), or "
                           f"text/.jsonl/.gz files and folders (one sentence per line, blank line between "
                           f"documents); several are read as one corpus, e.g. 'wiki imdb' [{' '.join(D.corpus)}]")
    data.add_argument("--text-field", metavar="FIELD", default=None,
                      help=f"JSONL field holding the text [{D.text_field}]")
    data.add_argument("--tokenizer", metavar="DIR", default=None,
                      help="a tokenizer folder (vocab.txt); default: train one on the corpus (cached)")
    data.add_argument("--vocab-size", type=int, metavar="N", default=None,
                      help=f"size of the vocabulary trained when no --tokenizer is given [{D.vocab_size}]")
    data.add_argument("--eval-fraction", type=float, metavar="X", default=None,
                      help=f"share of documents held out for evaluation [{D.eval_fraction}]")
    data.add_argument("--eval-examples", type=int, metavar="N", default=None,
                      help=f"held-out sequences per evaluation [{D.eval_examples}]")

    model = parser.add_argument_group("model and objective")
    model.add_argument("--init", metavar="RUN_OR_MODEL", default=None,
                       help="continued pre-training: start from this model (a run folder, a checkpoint, or a Hugging "
                            "Face folder with a masked-LM head), with its config and vocabulary (no tokenizer is "
                            "trained; --config, --tokenizer, --vocab-size do not apply; "
                            "docs/continued_pretraining.md)")
    model.add_argument("--config", metavar="NAME", default=None,
                       help=f"model size: mini, tiny, small, base, large; a descendant of mini: albert-mini "
                            f"(shared layers, factorised embeddings), roberta-mini, preln-mini (pre-LN); or a "
                            f"config.json, whose model_type (bert, roberta, roberta-prelayernorm, albert) picks the "
                            f"architecture (docs/descendants.md) [{D.config}]")
    model.add_argument("--objective", choices=OBJECTIVES, default=None,
                       help=f"mlm: RoBERTa-style full sentences; mlm+sop: ALBERT's sentence-order prediction "
                            f"(two consecutive segments, swapped half the time); mlm+nsp: BERT's sentence pairs with "
                            f"next-sentence prediction; electra: a small generator fills the masks, the model learns "
                            f"to spot the replaced tokens (docs/descendants.md) [{D.objective}]")
    model.add_argument("--generator-size", type=float, metavar="X", default=None,
                       help=f"electra: the generator's hidden size as a share of the model's [{D.generator_size}]")
    model.add_argument("--dropout", type=float, metavar="X", default=None,
                       help=f"dropout during pre-training (short runs learn faster without) [{D.dropout}]")
    model.add_argument("--seq-len", type=int, metavar="N", default=None,
                       help="tokens per sequence [min(128, the model's max positions): 64 for mini and tiny]")
    model.add_argument("--mask-prob", type=float, metavar="X", default=None,
                       help=f"share of tokens to predict in training; held-out masks stay at 15%% [{D.mask_prob}]")
    model.add_argument("--mask-prob-end", type=float, metavar="X", default=None,
                       help="let the training masking rate fall linearly from --mask-prob to X over the run "
                            "[constant]")
    model.add_argument("--packing", choices=PACKINGS, default=None,
                       help=f"mlm training sequences: whole sentences (RoBERTa), or full: filled to --seq-len, a "
                            f"sentence cut where the sequence ends (held-out sequences stay whole) [{D.packing}]")
    model.add_argument("--group-by-length", action=argparse.BooleanOptionalAction, default=None,
                       help=f"batches of sequences of similar length, so less padding is computed (each epoch "
                            f"still shows every sequence once) [{'on' if D.group_by_length else 'off'}]")
    model.add_argument("--whole-word-mask", action="store_true", default=None,
                       help="mask all pieces of a word together")
    model.add_argument("--short-seq-prob", type=float, metavar="X", default=None,
                       help=f"mlm+nsp, mlm+sop: share of shorter sequences [{D.short_seq_prob}]")

    opt = parser.add_argument_group("optimisation")
    opt.add_argument("--steps", type=int, metavar="N", default=None,
                     help="optimizer steps (default: as many as fit in --minutes)")
    opt.add_argument("--minutes", type=float, metavar="X", default=None,
                     help=f"training time budget when --steps is not given [{D.minutes:g}]")
    opt.add_argument("--batch-size", type=int, metavar="N", default=None, help=f"sequences per batch [{D.batch_size}]")
    opt.add_argument("--grad-accum", type=int, metavar="N", default=None,
                     help=f"batches whose gradients are summed per optimizer step [{D.grad_accum}]")
    opt.add_argument("--recompute", action="store_true", default=None,
                     help="activation recompute: keep only each layer's input in the forward and compute the "
                          "layer again in the backward: far less memory for long sequences or large batches, "
                          "about one more forward per step, the same numbers bit for bit")
    opt.add_argument("--lr", type=float, metavar="X", default=None, help=f"peak learning rate [{D.lr:g}]")
    opt.add_argument("--warmup", type=float, metavar="X", default=None,
                     help=f"warmup as a fraction of the steps, then linear decay to 0 [{D.warmup}]")
    opt.add_argument("--weight-decay", type=float, metavar="X", default=None,
                     help=f"AdamW weight decay [{D.weight_decay}]")
    opt.add_argument("--beta2", type=float, metavar="X", default=None,
                     help=f"AdamW's second-moment decay (the first is {D.betas[0]}) [{D.betas[1]}]")
    opt.add_argument("--output-bias", choices=OUTPUT_BIAS_INITS, default=None,
                     help=f"MLM output bias at the start: zero (BERT), or the log frequency of each token in the "
                          f"training text (the model starts at the unigram stage) [{D.output_bias}]")
    opt.add_argument("--clip", type=float, metavar="X", default=None,
                     help=f"gradient-norm clipping, 0 = off [{D.clip}]")
    opt.add_argument("--seed", type=int, metavar="N", default=None, help=f"random seed [{D.seed}]")

    from minibert.training.procs import add_procs_argument
    add_procs_argument(parser, "its share of every batch and of the cores")

    run = parser.add_argument_group("run folder")
    run.add_argument("--name", metavar="NAME", default=None, help="run folder name [<config>-<corpus>-<date>-<time>]")
    run.add_argument("--runs-dir", metavar="DIR", default=None, help=f"where run folders go [{D.runs_dir}]")
    run.add_argument("--log-every", type=int, metavar="N", default=None,
                     help=f"steps per metrics.jsonl train line [{D.log_every}]")
    run.add_argument("--eval-every", type=int, metavar="N", default=None,
                     help="steps between evaluations [about 10 per run]")
    run.add_argument("--save-every", type=int, metavar="N", default=None,
                     help="steps between checkpoints [about 4 per run]")
    run.add_argument("--keep-checkpoints", type=int, metavar="N", default=None,
                     help=f"how many checkpoints to keep, 0 = all [{D.keep_checkpoints}]")
    run.add_argument("--resume", metavar="RUN_DIR", default=None,
                     help="continue that run from its latest checkpoint, with its saved settings, to its total "
                          "number of steps (exactly as if it had never stopped)")
    run.add_argument("--no-plot", dest="plot", action="store_false", default=None, help="do not draw training.png")
    run.add_argument("--no-examples", action="store_true", help="do not print fill-mask examples at the end")
    run.add_argument("--quiet", action="store_true", default=None, help="no progress bars")
    parser.formatter_class = argparse.RawDescriptionHelpFormatter


def _given(args) -> dict:
    """The settings the user typed (argparse defaults are None, so anything else was given)."""
    names = set(PretrainSettings.__dataclass_fields__)
    given = {k: v for k, v in vars(args).items() if k in names and v is not None and k != "resume"}
    if getattr(args, "beta2", None) is not None:
        given["betas"] = (D.betas[0], args.beta2)
    if "init" in given:  # (typed, even with its default value: the model given decides these)
        from minibert.training.settings import INIT_DECIDES, init_conflict
        for name in INIT_DECIDES:
            if name in given:
                raise ValueError(init_conflict(name, given["init"]))
    return given


def run(args) -> int:
    from minibert.training.pretrain import pretrain

    def report(summary, settings):
        _print_summary(summary, show_examples=not args.no_examples, objective=settings.objective)
    return start_or_resume(args, _given(args), PretrainSettings, pretrain, report)


def start_or_resume(args, given: dict, settings_class, train, report) -> int:
    """New settings from the options `given`, or a run's saved ones with --resume; then `train(settings,
    resume_checkpoint=, run_dir=, comm=)` on every rank (--procs N, mpiexec, srun: docs/scaling.md) and, on rank
    0, `report(summary, settings)`. Returns the exit code: 1 when training stopped (said on stderr)."""
    from minibert.training.pretrain import TrainingStopped
    from minibert.training.ranks import not_yet_a_rank, run_on_ranks, start_ranks
    command = f"minibert {getattr(settings_class, 'COMMAND', 'pretrain')}"
    resolved = None
    if not_yet_a_rank():  # the settings are checked once, here, before any rank starts
        resolved = _settings(args, given, settings_class)
        if resolved[2] is not None:  # --resume of a run another process is training: said now, not after the
            # data is prepared (only here: ranks checking at once would see each other; rank 0 then holds it)
            from minibert.training.run_dir import check_not_being_trained
            check_not_being_trained(resolved[2])
            finished = _finished(resolved[1], resolved[2])  # said in one line, before any rank starts
            if finished:
                print(finished)
                return 0
        from minibert.data.corpus import corpus_files
        corpus_files(resolved[0].corpus)  # a mistyped --corpus: one line from this process, not from rank 0 of N
        start_ranks(args, resolved[0].batch_size)

    def body(comm) -> int:
        settings, checkpoint, run_dir = resolved or _settings(args, given, settings_class)
        finished = _finished(checkpoint, run_dir)  # (ranks started by mpiexec: each finds it, rank 0 says it)
        if finished:
            if comm.is_root:
                print(finished)
            return 0
        try:
            summary = train(settings, resume_checkpoint=checkpoint, run_dir=run_dir, comm=comm)
        except TrainingStopped as e:  # raised by every rank at the same step (decided on summed numbers)
            if comm.is_root:
                print(f"{command}: {e}", file=sys.stderr)
            return 1
        if comm.is_root:
            report(summary, settings)
        return 0
    return run_on_ranks(command, body)


def _finished(checkpoint, run_dir) -> str | None:
    """With --resume of a run that already did all its steps: the one line that says so (nothing is started,
    the run's files stay as they are); otherwise None."""
    if checkpoint is None:
        return None
    from minibert.training.run_dir import finished_run, nothing_to_resume
    summary = finished_run(run_dir, checkpoint)
    return None if summary is None else nothing_to_resume(run_dir, summary)


def _settings(args, given: dict, settings_class):
    """(settings, checkpoint to resume from or None, run folder or None), checked as far as can be before the
    data is prepared."""
    from minibert.training.pretrain import check_before_data
    from minibert.training.run_dir import resume_settings
    if args.resume:
        settings, checkpoint, run_dir = resume_settings(Path(args.resume), given, settings_class)
    else:
        settings, checkpoint, run_dir = settings_class(**given), None, None
    check_before_data(settings, checkpoint)
    return settings, checkpoint, run_dir


def _print_summary(summary: dict, show_examples: bool = True, objective: str = "mlm") -> None:
    m = summary["eval"]
    print()
    print(done_line(summary))
    print(f"held-out ({counted(summary['eval_sequences'], 'sequence')}, "
          f"{counted(m['masked_tokens'], 'masked token')}):")
    print(f"  masked-token accuracy {m['mlm_acc']:.1%}  (always guessing {summary['baseline_token']!r}: "
          f"{summary['baseline_acc']:.1%})")
    print(f"  perplexity {m['ppl']:,.1f}  (MLM loss {m['mlm_loss']:.3f})")
    if "nsp_acc" in m:
        task = "sentence-order" if objective == "mlm+sop" else "next-sentence"  # the same head, ALBERT's task
        print(f"  {task} accuracy {m['nsp_acc']:.1%}  (chance: 50%)")
    if "rtd_acc" in m:  # ELECTRA: the lines above are its generator's, this one its discriminator's
        print(f"  replaced-token detection accuracy {m['rtd_acc']:.1%}  (always guessing 'original': "
              f"{m['rtd_baseline_acc']:.1%}); the masked-LM lines above are the generator's")
    if summary.get("peak_rss_mb"):
        every_rank = (f"; {summary['peak_rss_mb_all_ranks']:,.0f} MB added up over the {summary['ranks']} "
                      f"processes" if summary.get("peak_rss_mb_all_ranks") else "")
        print(f"  peak memory {summary['peak_rss_mb']:,.0f} MB (resident{every_rank})")
        if summary.get("peak_pss_mb_all_ranks"):  # what the job holds: the pages the processes share count once
            print(f"  the {summary['ranks']} processes together: {summary['peak_pss_mb_all_ranks']:,.0f} MB "
                  f"counting the memory they share once (proportional set size)")
    if summary.get("stopped_early"):
        print(f"note: {summary['stopped_early']}")
    print(f"model: {summary['checkpoint']}")
    if summary.get("plot"):
        print(f"curves: {summary['plot']}")
    if show_examples:
        _print_examples(summary)
    print(f'try:   minibert fill-mask --model {summary["run"]} "the capital of france is [MASK]."')


def done_line(summary: dict) -> str:
    """The summary's first line (`minibert pretrain` and `distill`). A resumed run says what this session did (its
    steps, wall time, data preparation, training time and throughput) apart from the whole run's training time and
    throughput (summary.json's "session" against its top-level numbers)."""
    times = (f"data preparation {_duration(summary['prepare_seconds'])}, training "
             f"{_duration(summary['train_seconds'])}, {summary['tokens_per_s']:,.0f} tokens/s")
    session = summary.get("session")
    if not session:
        return f"done: {counted(summary['steps'], 'step')} in {_duration(summary['wall_seconds'])} ({times})"
    return (f"done: {counted(summary['steps'], 'step')}; this session: {counted(session['steps'], 'step')} "
            f"(resumed at step {session['resumed_at_step']:,}) in {_duration(summary['wall_seconds'])} "
            f"(data preparation "
            f"{_duration(summary['prepare_seconds'])}, training {_duration(session['train_seconds'])}, "
            f"{session['tokens_per_s']:,.0f} tokens/s); the whole run: training {_duration(summary['train_seconds'])}, "
            f"{summary['tokens_per_s']:,.0f} tokens/s")


EXAMPLES = ("the [MASK] is the largest planet in the solar system.",
            "paris is the capital of [MASK].",
            "she played the [MASK] in the orchestra.")


def _print_examples(summary: dict) -> None:
    from minibert.fill_mask import FillMask
    filler = FillMask.from_pretrained(summary["checkpoint"])
    print("fill-mask:")
    for text in EXAMPLES:
        guesses = filler(text, top_k=5)[0]
        shown = ", ".join(f"{g['token_str']} ({g['score']:.1%})" for g in guesses)
        print(f"  {text}\n      -> {shown}")


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"
