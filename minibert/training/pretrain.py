"""Pre-training: `pretrain(settings)`. Its loop, `_loop`, fits on one screen:

    for step in range(start, total):
        lr <- warmup then linear decay
        forward_backward (objectives.py): for each of grad_accum micro-batches:
            take examples -> pad into a batch -> mask (dynamically) -> forward -> backward
        clip gradients (several ranks: summed first) -> (stop on a non-finite loss) -> AdamW step
        every log_every: a train line in metrics.jsonl;  every eval_every: held-out metrics;
        every save_every: an atomic checkpoint
        (with --minutes: correct the total from the measured step times; budget.Budget)

Around it: _prepare (the data, cached), _set_up (model, optimizer, masking, data stream), _start (a new run's
folder, first evaluation and plan) or _resume (a checkpoint's state), and _finish (final evaluation, plot,
summary). The objectives (MLM, NSP/SOP, ELECTRA, distillation) differ only inside forward_backward.

Exact resume: everything random is either a function of (seed, step) (masking), of (seed, epoch) (the
examples of an epoch and their order), or carried in the checkpoint (the dropout generator's state, the data
position, the optimizer moments). So a run stopped at step k and resumed produces the same numbers, bit for
bit, as one that never stopped.

Data-parallel (`mpiexec -n N minibert pretrain`, see distributed.py and docs/scaling.md): every rank draws the
same global batch and masks as the single process, trains on its 1/N of the rows, and one Allreduce sums the
gradients. Each rank's loss is weighted so that the sum equals the single-process gradient: the MLM part by
(this rank's masked tokens) / (the global batch's masked tokens), the NSP part by 1/N (every rank has B/N
pairs). Rank 0 alone evaluates, writes and prints.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import time
from contextlib import nullcontext
from pathlib import Path

import numpy as np

from minibert._plural import counted
from minibert._progress import tqdm
from minibert.config import BertConfig
from minibert.data.examples import PAIR_OBJECTIVES, ExampleStream
from minibert.data.masking import Masker, continuation_mask
from minibert.data.prepare import prepare_data
from minibert.io.atomic import atomic_write_text
from minibert.layers.gelu_select import numba_gelu_loop, numpy_gelu_unless_asked
from minibert.models.bert import bert_param_shapes
from minibert.optim import AdamW, clip_grad_norm
from minibert.training.budget import Budget, Plan, make_plan, measure_step_seconds, steps_that_fit
from minibert.training.checkpointing import load_training_state, save_checkpoint
from minibert.training.distributed import LocalCommunicator, check_divisible, rank_share
from minibert.training.evaluate import build_eval_batches, evaluate, most_frequent_token_accuracy, token_counts
from minibert.training.memory import ProportionalPeak, other_ranks_peaks, peak_rss_mb
from minibert.training.metrics import MetricsLog, Window
from minibert.training.objectives import (STEP_SUMS, add_to_window, brings_own_model, build_model, check_objective,
                                         forward_backward, masked_batch, output_bias_name)
from minibert.training.objectives import MASKING_STREAM, masking_rate  # noqa: F401 (re-exported: tests, benchmarks)
from minibert.training.run_dir import (check_new_run_dir, check_not_being_trained, create_run_dir, finished_run,
                                       free_run_name, hold_run_dir, latest_checkpoint, nothing_to_resume,
                                       release_run_dirs, remove_unstarted_run, resume_advice, resume_settings)
from minibert.training.settings import PretrainSettings, option
from minibert.training.sharded import ShardedAdamW

EVAL_MASK_PROB = 0.15  # held-out masks: BERT's rate, whatever --mask-prob trains with


class TrainingStopped(Exception):
    """The loss or gradient became NaN/inf: training stopped, the last good checkpoint is kept."""


def model_config(settings: PretrainSettings, vocab_size: int | None) -> BertConfig:
    """The config (--config) model for a tokenizer of `vocab_size` tokens (None: not known yet, not checked). A
    BertConfig given in Python is copied (the caller's is left alone) and, like a preset, takes the tokenizer's
    vocabulary size."""
    if isinstance(settings.config, BertConfig):
        config = copy.deepcopy(settings.config)
        if vocab_size is not None and config.vocab_size != vocab_size:
            config = dataclasses.replace(config, vocab_size=vocab_size)  # (checked again: pad_token_id < vocab)
    elif settings.config.endswith(".json"):
        config = BertConfig.from_json_file(settings.config)
        if vocab_size is not None and config.vocab_size != vocab_size:
            raise ValueError(f"{settings.config}: vocab_size is {config.vocab_size} but the tokenizer has "
                             f"{vocab_size} tokens")
    else:
        config = BertConfig.preset(settings.config, **({} if vocab_size is None else {"vocab_size": vocab_size}))
    if settings.dropout is not None:
        config.hidden_dropout_prob = config.attention_probs_dropout_prob = settings.dropout
    return config


def sequence_length(settings: PretrainSettings, config: BertConfig, whose: str = "the model's") -> int:
    seq_len = settings.seq_len or min(128, config.max_tokens)
    if seq_len > config.max_tokens:
        raise ValueError(f"{option('seq_len')} {seq_len} is longer than the {config.max_tokens} tokens {whose} "
                         f"max_position_embeddings ({config.max_position_embeddings}) allows")
    minimum = 5 if settings.objective in PAIR_OBJECTIVES else 3
    if seq_len < minimum:
        raise ValueError(f"{option('seq_len')} {seq_len} is too short for objective {settings.objective} (minimum "
                         f"{minimum})")
    return seq_len


def check_before_data(settings: PretrainSettings, resume_checkpoint: Path | None = None) -> None:
    """Every check that needs neither the corpus nor a trained tokenizer: the settings, the model (--config and
    --seq-len, or a distillation's teacher), --tokenizer, --runs-dir and --name. The commands run it in their own
    process before any rank starts (bad input: one line, said once), `pretrain` again before preparing the data
    (which may take minutes)."""
    settings.validate()
    if hasattr(settings, "check_model"):  # minibert distill: the teacher decides the model (distill/run.py)
        settings.check_model(resume_checkpoint)
    if resume_checkpoint:  # (its settings were checked when it started; its folder is the run's)
        return
    if settings.init is not None:  # continued pre-training: the model decides config and vocabulary
        from minibert.training.init_model import check_init
        config = check_init(settings.init).config
        check_objective(settings, config)
        sequence_length(settings, config, "the --init model's")
        check_new_run_dir(settings.runs_dir, settings.name)
        return
    tokenizer = None
    if settings.tokenizer is not None:
        from minibert.io.model_folder import resolve_tokenizer_folder
        from minibert.tokenizer import WordPieceTokenizer
        folder = resolve_tokenizer_folder(settings.tokenizer, option("tokenizer"))  # (its errors name both)
        try:
            tokenizer = WordPieceTokenizer.from_pretrained(folder)
        except (FileNotFoundError, ValueError) as e:  # (these name the file)
            raise type(e)(f"{option('tokenizer')}: {e}") from None
    if not brings_own_model(settings):
        vocab_size = len(tokenizer.vocab) if tokenizer is not None else None
        config = model_config(settings, vocab_size)
        check_objective(settings, config)
        sequence_length(settings, config)
        if settings.objective != "electra":  # (ELECTRA's models project any embedding_size)
            bert_param_shapes(config)  # e.g. an embedding_size that model_type has no projection for
    check_new_run_dir(settings.runs_dir, settings.name)


def recipe_parts(settings: PretrainSettings, model, data, seq_len: int, fresh: bool = True):
    """The training masker, the held-out batches, the most-frequent-token baseline, and (for a fresh model) the
    MLM output bias set to the log unigram frequencies of the training text.

    Returns (masker, eval_batches, top_token, baseline_acc). The held-out masks are always BERT's 15%, whatever
    --mask-prob trains with, so held-out numbers stay comparable between recipes.
    """
    tok, V = data.tokenizer, model.config.vocab_size
    special_ids = sorted(set(tok.all_special_ids))
    continuation = continuation_mask(tok.ids_to_tokens)
    masker = Masker(V, tok.mask_token_id, special_ids, continuation, settings.mask_prob, settings.whole_word_mask)
    eval_masker = Masker(V, tok.mask_token_id, special_ids, continuation, EVAL_MASK_PROB, settings.whole_word_mask)
    eval_batches = build_eval_batches(data.eval_documents, settings.objective, seq_len, settings.batch_size,
                                      eval_masker, tok.cls_token_id, tok.sep_token_id, tok.pad_token_id,
                                      settings.eval_examples, settings.short_seq_prob)
    counts = token_counts(data.train_documents, V)
    top_token, baseline_acc = most_frequent_token_accuracy(counts, eval_batches)
    if fresh and settings.output_bias == "unigram":
        # The model starts where the frequent-word plateau is (predicting the unigram distribution) instead of
        # spending its first few hundred steps learning it.
        model.params[output_bias_name(model)][...] = unigram_log_probs(counts, special_ids)
    return masker, eval_batches, top_token, baseline_acc


def unigram_log_probs(counts: np.ndarray, special_ids) -> np.ndarray:
    """(V,) log frequency of each token in the training text (add-one smoothed); special tokens, never targets,
    get the log probability of an unseen token."""
    counts = counts.astype(np.float64) + 1.0  # (V,)
    counts[list(special_ids)] = 1.0
    return np.log(counts / counts.sum())


def training_stream(settings: PretrainSettings, data, seq_len: int) -> ExampleStream:
    """The endless, shuffled supply of training sequences, epoch after epoch (batches grouped by length unless
    --no-group-by-length)."""
    tok = data.tokenizer
    return ExampleStream(data.train_documents, settings.objective, seq_len, settings.seed, tok.cls_token_id,
                         tok.sep_token_id, settings.short_seq_prob, fill=settings.packing == "full",
                         group_batch_size=settings.batch_size if settings.group_by_length else None)


def pretrain(settings: PretrainSettings, resume_checkpoint: Path | None = None, run_dir: Path | None = None,
             log=print, comm=None) -> dict:
    """Run (or resume) pre-training; returns the summary also saved as RUN_DIR/summary.json (its "run": the run
    folder; RUN_DIR/settings.json: every setting as it ran, defaults resolved).

    `settings` is not changed: the run works on a copy, so the same object can be passed again (another run,
    in its own folder when `name` is not set). With `settings.resume` a run folder, the run it holds is
    continued with its saved settings (a setting given another value than its default must match the saved
    one), as `--resume` does; `resume_checkpoint` and `run_dir` are the command line's way to say the same.

    comm: a communicator from training/distributed.py (default: one process, this one). With several ranks, every
    rank calls this; rank 0 returns the summary, the others None.

    Pre-training keeps NumPy's GELU unless MINIBERT_NUMBA=1 asks for numba's: for the mini model numba buys ~3%
    more steps for ~150 MB more memory (docs/performance.md). Distillation (whose teacher is often large) and
    everything else use numba's when it is installed."""
    settings = copy.deepcopy(settings)  # the caller's object stays as it was (name, a distillation's defaults...)
    if resume_checkpoint is None and settings.resume is not None:
        settings, resume_checkpoint, run_dir = _resume_from_settings(settings)
        if comm is None or comm.is_root:  # a run another process is training: said now, not after the data is
            check_not_being_trained(run_dir)  # prepared (rank 0 alone: ranks probing at once would see each other)
    gelu = numpy_gelu_unless_asked() if getattr(settings, "COMMAND", "pretrain") == "pretrain" else nullcontext()
    made = []  # folders made for a new run, until its training starts: removed if it fails before that
    try:
        with gelu:
            return _train(settings, resume_checkpoint, run_dir, log, comm, made)
    except BaseException:
        if made:
            remove_unstarted_run(made)
        raise
    finally:
        release_run_dirs()  # the run folder's lock ends with the run, not only with the process


def _resume_from_settings(settings: PretrainSettings):
    """(the run's saved settings, its latest checkpoint, its folder) for `settings.resume`: what `--resume` does,
    the settings given other values than their defaults being the options given."""
    settings.validate()
    defaults = type(settings)()
    given = {f.name: getattr(settings, f.name) for f in dataclasses.fields(settings)
             if f.name != "resume" and getattr(settings, f.name) != getattr(defaults, f.name)}
    return resume_settings(Path(settings.resume), given, type(settings))


@dataclasses.dataclass
class Run:
    """What the loop trains with (set up by _set_up), and the counters a checkpoint carries."""
    settings: PretrainSettings
    comm: object
    data: object
    model: object
    optimizer: object
    masker: Masker
    stream: ExampleStream
    eval_batches: list
    plan: Plan | None = None
    run_dir: Path | None = None
    metrics: MetricsLog | None = None
    window: Window = dataclasses.field(default_factory=Window)
    shared_once: ProportionalPeak = dataclasses.field(default_factory=ProportionalPeak)  # this rank's memory with
    # shared pages split between the ranks (PSS)
    seq_len: int = 0
    use_nsp: bool = False
    numba_gelu: bool = False
    corpus_fingerprint: str | None = None
    state: dict | None = None  # a resumed run's checkpoint state (state.json)
    optimizer_state: dict | None = None  # ... and its optimizer moments, until the optimizer holds them
    start_step: int = 0
    train_seconds: float = 0.0
    tokens_seen: int = 0
    elapsed_before: float = 0.0
    eval_seconds: float | None = None
    resumed: bool = False
    top_token: int = 0
    baseline_acc: float = 0.0
    done: int = 0


def _train(settings: PretrainSettings, resume_checkpoint: Path | None, run_dir: Path | None, log, comm,
           made: list) -> dict:
    check_before_data(settings, resume_checkpoint)
    comm = comm or LocalCommunicator()
    if not comm.is_root:
        log = _silent
    if resume_checkpoint:  # a run that already did all its steps: nothing to do, and its files stay as they are
        folder = run_dir or Path(resume_checkpoint).parent.parent
        finished = finished_run(folder, resume_checkpoint)
        if finished is not None:
            log(nothing_to_resume(folder, finished))
            return finished if comm.is_root else None
    check_divisible(settings.batch_size, comm.size)
    t_start = time.perf_counter()
    data = _prepare(settings, resume_checkpoint, log, comm)
    run = _set_up(settings, data, resume_checkpoint, log, comm)
    if resume_checkpoint:
        _resume(run, resume_checkpoint, run_dir, log)
    else:
        _start(run, log, made)
    last_eval, stopped_early, budget = _loop(run, log, made)
    return _finish(run, last_eval, stopped_early, budget, t_start, log)


def _loop(run: Run, log, made: list) -> tuple[dict | None, str | None, Budget]:
    """The training loop: batch, forward, backward, step, log, evaluate, checkpoint. Returns (the last held-out
    metrics or None, why the run stopped early or None, the run's clock)."""
    settings, comm, model, optimizer, plan, window = (run.settings, run.comm, run.model, run.optimizer, run.plan,
                                                       run.window)
    made.clear()  # training starts: from here on a failure leaves the run folder (and says what it holds)
    progress = not settings.quiet and comm.is_root
    bar = tqdm(total=plan.total_steps, initial=run.start_step, unit="step", disable=not progress, dynamic_ncols=True,
               desc={"distill": "distilling"}.get(getattr(settings, "COMMAND", "pretrain"), "pre-training"))
    say = bar.write if progress else log  # lines printed during training must not break the progress bar
    budget = Budget(settings, run.resumed, run.eval_seconds, run.elapsed_before)
    last_eval, stopped_early, step = None, None, run.start_step
    try:
        while step < plan.total_steps:
            t_step = time.perf_counter()
            lr = plan.lr(step)  # warmup, then linear decay to 0 at the last step
            # A blow-up (overflow, NaN) is detected just below and reported in one clear message instead.
            with np.errstate(over="ignore", invalid="ignore"):
                # every micro-batch: take examples -> pad -> mask -> forward this rank's share -> backward
                sums, names, tokens = forward_backward(model, settings, run.masker, run.stream,
                                                       run.data.tokenizer.pad_token_id, step, plan.total_steps,
                                                       comm, budget.over)
                if comm.size > 1:  # the gradient of the global batch, each rank summing and clipping its shard
                    grad_norm, sums = optimizer.reduce_and_clip(sums, settings.clip)
                else:
                    grad_norm = clip_grad_norm(model.grads, settings.clip)
                step_loss = add_to_window(window, sums, names)
                if not (math.isfinite(step_loss) and math.isfinite(grad_norm)):
                    raise TrainingStopped(_nan_message(run.run_dir, step + 1, f"the loss ({step_loss}) or gradient "
                                                       f"norm ({grad_norm}) is not a finite number", settings.lr))
                optimizer.step(lr)
            seconds = time.perf_counter() - t_step
            budget.step_took(seconds, first_of_session=step == run.start_step)
            window.seconds += seconds
            window.steps += 1
            run.train_seconds += seconds
            run.tokens_seen += tokens
            step += 1
            bar.update(1)

            if step == plan.next_replan:  # --minutes: correct the number of steps from the recent step times
                plan, note = budget.replan(plan, step, settings, comm)
                run.plan, bar.total = plan, plan.total_steps
                if note:
                    say(note)
            if (step % settings.log_every == 0 or step == plan.total_steps) and comm.is_root:
                _log_train(run, bar, step, lr, grad_norm, budget.elapsed())
            over_budget = sums[STEP_SUMS.index("over_budget")] > 0 and step < plan.total_steps
            evaluating = step % plan.eval_every == 0 or step == plan.total_steps
            saving = step % plan.save_every == 0 or step == plan.total_steps or over_budget
            if evaluating or saving:  # several ranks: the weights must still be the same everywhere (under --procs
                # one shared buffer, so this holds by construction; MPI ranks keep their own copies)
                comm.check_identical(model.params.buffer, f"the weights after step {step:,}")
            if evaluating:  # every rank evaluates its share of the held-out batches; rank 0 writes the result
                last_eval = evaluate(model, run.eval_batches, run.use_nsp, comm)
                run.shared_once.sample()  # between steps, the memory of a step is still held: near the peak
                if comm.is_root:
                    run.metrics.append({"step": step, "split": "eval", **_reported(model, last_eval),
                                        "elapsed": budget.elapsed()})
                    say(_eval_line(step, last_eval))
            if saving:
                _save(run, step, budget.elapsed())
            if over_budget:
                stopped_early = (f"stopped at step {step:,} of {plan.total_steps:,}: training took longer than "
                                 f"planned (the machine got slower?); resume with {resume_advice(run.run_dir)}")
                say(stopped_early)
                break
    except KeyboardInterrupt:
        bar.close()
        log(_interrupted(run, step))
        raise
    finally:
        bar.close()
    run.done = step
    return last_eval, stopped_early, budget


def _prepare(settings: PretrainSettings, resume_checkpoint: Path | None, log, comm):
    """corpus -> tokenizer -> token ids, all cached: rank 0 first, the other ranks then read its cache."""
    tokenizer_dir = str(resume_checkpoint) if resume_checkpoint else settings.tokenizer
    if settings.init is not None and not resume_checkpoint:  # continued pre-training: the model's vocabulary
        from minibert.training.init_model import check_init
        tokenizer_dir = str(check_init(settings.init).tokenizer)
    if not comm.is_root:
        with comm.patient():  # (training a tokenizer on a large corpus may take rank 0 hours)
            comm.barrier()
    data = prepare_data(settings.corpus, settings.text_field, tokenizer_dir, settings.vocab_size,
                        settings.eval_fraction, progress=not settings.quiet and comm.is_root, log=log)
    if comm.is_root:
        comm.barrier()
    with comm.patient():  # and every rank waits for the others' (they read the corpus again: no time limit)
        comm.barrier()
    if settings.objective == "mlm+nsp" and len(data.train_documents) < 2:
        raise ValueError(f"objective mlm+nsp needs at least 2 training documents (separated by blank lines); "
                         f"corpus {data.corpus.name} has {len(data.train_documents)}")
    return data


def _set_up(settings: PretrainSettings, data, resume_checkpoint: Path | None, log, comm) -> Run:
    """The model (new, resumed, or a distillation's), its optimizer (sharded over several ranks), the masking
    and the data stream."""
    tok, corpus_fingerprint, state, optimizer_state = data.tokenizer, data.corpus.fingerprint(), None, None
    if resume_checkpoint:
        state, optimizer_state = load_training_state(resume_checkpoint)
        model = build_model(settings, checkpoint=resume_checkpoint)
        config = model.config
        if state.get("corpus") != corpus_fingerprint:
            raise ValueError(f"the corpus {', '.join(settings.corpus)} changed since {resume_checkpoint} was written "
                             f"(its files' hash differs): an exact resume needs the same text")
        if config.vocab_size != len(tok.vocab):
            raise ValueError(f"{resume_checkpoint}: the model has vocab_size {config.vocab_size} but its vocab.txt "
                             f"has {len(tok.vocab)} tokens")
        if state.get("ranks", 1) != comm.size:  # same global batch, so supported; only the rounding differs
            log(f"note: {resume_checkpoint} was trained on {state.get('ranks', 1)} rank(s), continuing on "
                f"{comm.size}: same global batch and schedule, sums rounded differently (not bit for bit)")
    elif brings_own_model(settings):  # minibert distill: the student's config comes from its teacher
        model = build_model(settings)
        config = model.config
    elif settings.init is not None:  # continued pre-training: the model as saved, head and output bias included
        from minibert.training.init_model import load_init_model
        model = load_init_model(settings, build_model, log)
        config = model.config
    else:
        config = model_config(settings, len(tok.vocab))
        model = build_model(settings, config)
    seq_len = sequence_length(settings, config)
    use_nsp = settings.objective in PAIR_OBJECTIVES  # the pooled [CLS] head: NSP, or ALBERT's SOP
    if use_nsp and config.type_vocab_size < 2:
        raise ValueError(f"objective {settings.objective} puts sentence pairs in two segments, but the model has "
                         f"type_vocab_size {config.type_vocab_size} (RoBERTa's one token type); use objective "
                         f"(--objective) mlm")
    model.train()
    model.set_recompute(settings.recompute)
    masker, eval_batches, top_token, baseline_acc = recipe_parts(settings, model, data, seq_len,
                                                                 fresh=not resume_checkpoint and settings.init is None)
    adamw_options = dict(lr=settings.lr, betas=settings.betas, eps=settings.eps, weight_decay=settings.weight_decay)
    if comm.size > 1:  # each rank updates 1/N of the weights and keeps 1/N of the moments (training/sharded.py)
        if not (model.params.intact() and model.grads.intact()):
            raise RuntimeError("data-parallel training needs the model's weights and gradients in flat buffers "
                               "(minibert/flat.py): an entry was replaced")
        # (after recipe_parts, which sets the output bias: under --procs the weights are shared from here on)
        optimizer = ShardedAdamW(model.params, model.grads, comm, **adamw_options)
        if hasattr(model, "after_sharing"):  # ELECTRA: its sub-models' views; distillation: one shared teacher
            model.after_sharing(comm)
    else:
        optimizer = AdamW(model.params, model.grads, **adamw_options)
    stream = training_stream(settings, data, seq_len)
    # numba's GELU, if used, is compiled now, not inside the timed evaluation or step probe
    numba_gelu = config.hidden_act == "gelu" and numba_gelu_loop() is not None
    return Run(settings, comm, data, model, optimizer, masker, stream, eval_batches, seq_len=seq_len,
               use_nsp=use_nsp, numba_gelu=numba_gelu, top_token=top_token, baseline_acc=baseline_acc,
               corpus_fingerprint=corpus_fingerprint, state=state, optimizer_state=optimizer_state)


def _resume(run: Run, resume_checkpoint: Path, run_dir: Path, log) -> None:
    """Continue where the checkpoint stopped: its optimizer moments, dropout generator, data position, log window,
    plan and counters (the run's metrics.jsonl cut back to its step)."""
    state, comm = run.state, run.comm
    run.optimizer.load_state_dict(run.optimizer_state)
    run.optimizer_state = None  # the whole moments: a rank of several keeps only its part
    run.model.rng.bit_generator.state = state["dropout_rng"]
    run.stream.load_state_dict(state["data"])
    run.window.load_state_dict(state["window"])
    run.plan = Plan(**{**state["plan"], "next_replan": None})  # a resumed run keeps its plan
    run.start_step, run.train_seconds, run.tokens_seen = state["step"], state["train_seconds"], state["tokens_seen"]
    run.resumed, run.elapsed_before, run.run_dir = True, state["elapsed"], run_dir
    run.metrics = MetricsLog(run_dir / "metrics.jsonl")
    if comm.is_root:
        hold_run_dir(run_dir)  # (two processes resuming one run would write over each other)
        run.metrics.truncate_after(run.start_step)
    log(f"resuming {run_dir} at step {run.start_step:,} of {run.plan.total_steps:,}")


def _start(run: Run, log, made: list) -> None:
    """A new run: rank 0 makes the run folder, evaluates the untrained model and plans the steps (from its
    timings, with --minutes); every rank gets the folder and the plan; the start-up lines say what will run."""
    settings, comm, model, tok = run.settings, run.comm, run.model, run.data.tokenizer
    run_dir, plan, how_long = None, None, ""
    if comm.is_root:  # rank 0 makes the run folder and the plan (from its timings); the others get both
        name = settings.name or free_run_name(settings.runs_dir, settings.default_name(run.data.corpus.name))
        run_dir = create_run_dir(settings.runs_dir, name, log=log, made=made)
        settings.name = run_dir.name  # (this call's copy: settings.json records the name)
        _write_json(run_dir / "settings.json", settings.to_dict())
        metrics = MetricsLog(run_dir / "metrics.jsonl")
    t_eval = time.perf_counter()
    first_eval = evaluate(model, run.eval_batches, run.use_nsp, comm)  # several ranks: each its share of the batches
    eval_seconds = time.perf_counter() - t_eval
    if comm.is_root:
        metrics.append({"step": 0, "split": "eval", **_reported(model, first_eval), "elapsed": 0.0})
        if settings.steps:
            plan = make_plan(settings.steps, settings, timed=False)
        else:  # as many steps as fit in --minutes, measured on this machine (a rank's share of a batch)
            probe = masked_batch(run.stream.peek(settings.batch_size), run.masker, tok.pad_token_id,
                                 np.random.default_rng(0))
            step_seconds = measure_step_seconds(model, rank_share(probe, 0, comm.size), run.use_nsp,
                                                ranks=comm.size) * settings.grad_accum
            plan = make_plan(steps_that_fit(settings.minutes * 60, step_seconds, eval_seconds), settings,
                             timed=True)
            how_long = f" (for now: {step_seconds:.2f} s per step measured, {counted(settings.minutes, 'minute')})"
    run_dir, plan, run.eval_seconds = comm.broadcast(
        [str(run_dir), plan.state_dict(), eval_seconds] if comm.is_root else None)
    run.run_dir, run.plan = Path(run_dir), Plan(**plan)
    settings.name = run.run_dir.name
    run.metrics = MetricsLog(run.run_dir / "metrics.jsonl")
    log(f"run folder: {run.run_dir}")
    log(_plan_line(run, how_long))
    if run.numba_gelu:  # worth knowing: faster steps, more memory (docs/performance.md)
        log("exact GELU compiled by numba (a few % faster steps, ~130 MB more per process; "
            "MINIBERT_NUMBA=0: NumPy's)")


def _plan_line(run: Run, how_long: str) -> str:
    """The start-up line: the model, its objective, and the steps planned."""
    settings, comm, model, plan = run.settings, run.comm, run.model, run.plan
    ranks = (f" on {comm.size} {comm.ranks_are} ({counted(settings.batch_size // comm.size, 'sequence')} each)"
             if comm.size > 1 else "")
    objective = getattr(model, "objective_description", None) or f"objective {settings.objective}"
    return (f"model: {getattr(model, 'description', settings.describe_config())}, {model.num_parameters():,} "
            f"parameters; "
            f"{objective}; "
            f"{counted(plan.total_steps, 'step')}{how_long} of {settings.batch_size * settings.grad_accum} x "
            f"{run.seq_len} tokens{ranks}, peak lr {settings.lr:g}, warmup {counted(plan.warmup_steps, 'step')}")


def _log_train(run: Run, bar, step: int, lr: float, grad_norm: float, elapsed: float) -> None:
    """A train line in metrics.jsonl (the log window's means) and the progress bar's numbers (rank 0)."""
    record = _reported(run.model, run.window.record(lr, grad_norm))
    run.metrics.append({"step": step, "split": "train", **record, "epoch": run.stream.epoch, "elapsed": elapsed})
    accuracy = {"acc": f"{record['mlm_acc']:.3f}"} if run.window.masked else {}  # none: hidden distillation
    bar.set_postfix(loss=f"{record['loss']:.3f}", **accuracy, tok_s=f"{record['tokens_per_s']:,.0f}", lr=f"{lr:.2e}")
    run.window.reset()


def _save(run: Run, step: int, elapsed: float) -> None:
    """An atomic checkpoint (rank 0 writes it), after checking the weights are still finite numbers."""
    model, comm, settings = run.model, run.comm, run.settings
    if not all(np.isfinite(p).all() for p in model.params.values()):
        raise TrainingStopped(_nan_message(run.run_dir, step, "the weights are no longer finite numbers",
                                           settings.lr))
    state = {"step": step, "plan": run.plan.state_dict(), "data": run.stream.state_dict(),
             "dropout_rng": model.rng.bit_generator.state, "window": run.window.state_dict(),
             "train_seconds": run.train_seconds, "tokens_seen": run.tokens_seen, "elapsed": elapsed,
             "corpus": run.corpus_fingerprint, "settings": settings.to_dict(), "ranks": comm.size}
    # (several ranks: every rank sends its shard of the moments to rank 0, which writes them)
    optimizer_state = run.optimizer.state_dict()
    if comm.is_root:
        save_checkpoint(run.run_dir, step, model, run.data.tokenizer, optimizer_state, state,
                        settings.keep_checkpoints)
    if comm.size > 1:
        comm.barrier()  # rank 0 read the moments from where the other ranks' gradients go next


def _interrupted(run: Run, done: int) -> str:
    """What Ctrl-C during step done + 1 says: the latest checkpoint and the command that continues from it."""
    comm, run_dir = run.comm, run.run_dir
    latest = latest_checkpoint(run_dir) if comm.is_root else None
    command = f"{comm.launch_hint}minibert {getattr(run.settings, 'COMMAND', 'pretrain')}"
    return (f"interrupted during step {done + 1:,}; " + (f"the latest checkpoint is {latest}; continue with: "
            f"{command} {resume_advice(run_dir)}" if latest else "no checkpoint was saved yet"))


def _finish(run: Run, last_eval: dict | None, stopped_early: str | None, budget: Budget, t_start: float,
            log) -> dict | None:
    """The end: the final held-out numbers, the plot and summary.json (rank 0; the other ranks return None)."""
    comm, model, tok, done = run.comm, run.model, run.data.tokenizer, run.done
    others_rss, others_pss = other_ranks_peaks(comm, run.shared_once)
    if not comm.is_root:
        return None
    if last_eval is None:  # (rank 0 alone by now: the whole held-out set)
        last_eval = evaluate(model, run.eval_batches, run.use_nsp)
    run_dir = Path(run.run_dir).resolve()  # (a resumed run's folder is named as --resume gave it: maybe relative)
    summary = {
        "run": str(run_dir), "checkpoint": str(latest_checkpoint(run_dir)), "steps": done,
        "total_steps": run.plan.total_steps, "eval": _reported(model, last_eval)}
    if getattr(model, "predicts_masked_tokens", True):  # (a hidden-state distillation predicts no masked token)
        summary.update(baseline_token=tok.ids_to_tokens[run.top_token], baseline_acc=run.baseline_acc)
    summary.update({  # wall and preparation: this session's (this process's); training and tokens: the whole run's
        "wall_seconds": round(time.perf_counter() - t_start, 1),
        "prepare_seconds": round(run.data.seconds, 1), "train_seconds": round(run.train_seconds, 1),
        "tokens_seen": run.tokens_seen, "tokens_per_s": run.tokens_seen / max(run.train_seconds, 1e-9),
        "eval_sequences": sum(len(b["input_ids"]) for b in run.eval_batches), "stopped_early": stopped_early,
    })
    if run.resumed:  # what this session did, apart from the whole run's numbers above
        session_seconds = run.train_seconds - run.state["train_seconds"]
        tokens = run.tokens_seen - run.state["tokens_seen"]
        summary["session"] = {"resumed_at_step": run.start_step, "steps": done - run.start_step,
                              "train_seconds": round(session_seconds, 1), "tokens_seen": tokens,
                              "tokens_per_s": tokens / max(session_seconds, 1e-9),
                              "elapsed_seconds_all_sessions": budget.elapsed()}
    if comm.size > 1:  # rank 0's time in the gradient Allreduce (waiting for slower ranks included)
        summary.update(ranks=comm.size, allreduce_seconds=round(comm.allreduce_seconds, 3),
                       allreduce_bytes_per_step=model.grads.buffer.nbytes)
    if run.settings.plot:
        summary["plot"] = _plot(run_dir, log)
    summary["peak_rss_mb"] = peak_rss_mb()  # the whole process so far: data preparation, training, plot
    if comm.size > 1 and summary["peak_rss_mb"]:  # every rank's peak added up (shared pages count once per rank)
        summary["peak_rss_mb_all_ranks"] = round(summary["peak_rss_mb"] + others_rss, 1)
    if comm.size > 1 and run.shared_once.mb and others_pss > 0:  # all ranks together, shared pages counted once
        summary["peak_pss_mb_all_ranks"] = round(run.shared_once.mb + others_pss, 1)
    _write_json(run_dir / "summary.json", summary)
    return summary


# What a run that predicts no masked token (a hidden-state distillation) leaves out of metrics.jsonl and
# summary.json: they would read loss 0, perplexity 1, accuracy 0 and a baseline for a task it does not learn.
MLM_FIELDS = ("mlm_loss", "ppl", "mlm_acc", "masked_tokens")


def _reported(model, metrics: dict) -> dict:
    """`metrics` as logged: without MLM_FIELDS when the model predicts no masked token (no numbers change)."""
    if getattr(model, "predicts_masked_tokens", True):
        return metrics
    return {k: v for k, v in metrics.items() if k not in MLM_FIELDS}


def _silent(*args, **kwargs) -> None:
    """The log of ranks other than 0: one rank speaks for the job."""


def _eval_line(step: int, m: dict) -> str:
    line = f"step {step:>6,}  held-out:"
    if m.get("masked_tokens"):  # (a distillation of hidden states predicts no masked token)
        line += f" mlm loss {m['mlm_loss']:.3f}  ppl {m['ppl']:,.1f}  acc {m['mlm_acc']:.1%}"
    if "nsp_acc" in m:
        line += f"  nsp acc {m['nsp_acc']:.1%}"
    if "rtd_acc" in m:
        line += f"  replaced-token acc {m['rtd_acc']:.1%} (all-original guess {m['rtd_baseline_acc']:.1%})"
    for name in sorted(k for k in m if k.endswith("_loss") and k not in ("mlm_loss", "nsp_loss", "rtd_loss")):
        line += f"  {name[:-5]} {m[name]:.4f}"
    return line


def _nan_message(run_dir: Path, step: int, problem: str, lr: float) -> str:
    latest = latest_checkpoint(run_dir)
    kept = (f"the last good checkpoint, {latest}, is kept (resume with {resume_advice(run_dir)})" if latest
            else "no checkpoint had been saved yet")
    return (f"training stopped at step {step:,}: {problem}; nothing from this step was saved; {kept}. "
            f"Try a lower {option('lr')} (was {lr:g}) or a longer {option('warmup')}")


def _write_json(path: Path, data: dict) -> None:
    atomic_write_text(path, json.dumps(data, indent=2) + "\n")


def _plot(run_dir: Path, log) -> str | None:
    try:
        from minibert.viz.curves import plot_training_curves, read_metrics
        path = plot_training_curves(read_metrics(run_dir), run_dir / "training.png", title=run_dir.name)
        return str(path)
    except ImportError as e:
        log(f"(no training.png: {e})")
        return None
