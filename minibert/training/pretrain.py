"""The pre-training loop: one readable function, `pretrain(settings)`.

    prepare data (cached) -> build or resume model, optimizer, data stream -> plan the number of steps
    for step in range(start, total):
        lr <- warmup then linear decay
        for each of grad_accum micro-batches:
            take examples -> pad into a batch -> mask 15% (dynamically) -> forward -> backward
        clip gradients -> (stop on a non-finite loss) -> AdamW step
        every log_every: a train line in metrics.jsonl;  every eval_every: held-out metrics;
        every save_every: an atomic checkpoint
        (with --minutes: at the end of warmup, correct the total from the measured step times; budget.py)
    final evaluation, checkpoint, plot, summary

Exact resume: everything random is either a function of (seed, step) (masking), of (seed, epoch) (the
examples of an epoch and their order), or carried in the checkpoint (the dropout generator's state, the data
position, the optimizer moments). So a run stopped at step k and resumed produces the same numbers, bit for
bit, as one that never stopped.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from minibert.config import BertConfig
from minibert.data.examples import ExampleStream, collate
from minibert.data.masking import Masker, continuation_mask
from minibert.data.prepare import prepare_data
from minibert.io.atomic import atomic_write_text
from minibert.models import BertForPreTraining
from minibert.optim import AdamW, clip_grad_norm
from minibert.training.budget import Plan, make_plan, measure_step_seconds, replan, steps_that_fit
from minibert.training.checkpointing import load_training_state, save_checkpoint
from minibert.training.evaluate import build_eval_batches, evaluate, most_frequent_token_accuracy, token_counts
from minibert.training.memory import peak_rss_mb
from minibert.training.metrics import MetricsLog, Window
from minibert.training.run_dir import create_run_dir, default_run_name, latest_checkpoint
from minibert.training.settings import PretrainSettings

EVAL_MASK_PROB = 0.15  # held-out masks: BERT's rate, whatever --mask-prob trains with
MASKING_STREAM = 2  # random streams of one seed: 1 = examples, 2 = masking (the model's dropout has its own)
BUDGET_OVERRUN = 1.15  # with --minutes, stop early if training takes this much longer than planned


class TrainingStopped(Exception):
    """The loss or gradient became NaN/inf: training stopped, the last good checkpoint is kept."""


def model_config(settings: PretrainSettings, vocab_size: int) -> BertConfig:
    if settings.config.endswith(".json"):
        config = BertConfig.from_json_file(settings.config)
        if config.vocab_size != vocab_size:
            raise ValueError(f"{settings.config}: vocab_size is {config.vocab_size} but the tokenizer has "
                             f"{vocab_size} tokens")
    else:
        config = BertConfig.preset(settings.config, vocab_size=vocab_size)
    if settings.dropout is not None:
        config.hidden_dropout_prob = config.attention_probs_dropout_prob = settings.dropout
    return config


def sequence_length(settings: PretrainSettings, config: BertConfig) -> int:
    seq_len = settings.seq_len or min(128, config.max_position_embeddings)
    if seq_len > config.max_position_embeddings:
        raise ValueError(f"--seq-len {seq_len} is longer than the model's max_position_embeddings "
                         f"({config.max_position_embeddings})")
    minimum = 5 if settings.objective == "mlm+nsp" else 3
    if seq_len < minimum:
        raise ValueError(f"--seq-len {seq_len} is too short for objective {settings.objective} (minimum {minimum})")
    return seq_len


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
        model.params["cls.predictions.bias"][...] = unigram_log_probs(counts, special_ids)
    return masker, eval_batches, top_token, baseline_acc


def unigram_log_probs(counts: np.ndarray, special_ids) -> np.ndarray:
    """(V,) log frequency of each token in the training text (add-one smoothed); special tokens, never targets,
    get the log probability of an unseen token."""
    counts = counts.astype(np.float64) + 1.0  # (V,)
    counts[list(special_ids)] = 1.0
    return np.log(counts / counts.sum())


def masked_batch(examples: list, masker: Masker, pad_id: int, rng) -> dict:
    """Pad the examples into a batch and mask it (a fresh mask each call: dynamic masking)."""
    batch = collate(examples, pad_id)
    batch["input_ids"], batch["labels"] = masker(batch["input_ids"], rng)
    return batch


def pretrain(settings: PretrainSettings, resume_checkpoint: Path | None = None, run_dir: Path | None = None,
             log=print, build_model=None) -> dict:
    """Run (or resume) pre-training; returns the summary also saved as RUN_DIR/summary.json.

    build_model(settings, resume_checkpoint or None) -> model trains another model the same way instead of a
    BertForPreTraining from settings.config (`minibert distill`: a student and its teacher, minibert.distill);
    its forward/backward take the same masked batches, its output may add `.parts` (extra losses to log)."""
    settings.validate()
    t_start = time.perf_counter()
    progress = not settings.quiet
    use_nsp = settings.objective == "mlm+nsp"

    # ---- data: corpus -> tokenizer -> token ids (all cached)
    tokenizer_dir = str(resume_checkpoint) if resume_checkpoint else settings.tokenizer
    data = prepare_data(settings.corpus, settings.text_field, tokenizer_dir, settings.vocab_size,
                        settings.eval_fraction, progress=progress, log=log)
    tok = data.tokenizer
    corpus_fingerprint = data.corpus.fingerprint()
    if use_nsp and len(data.train_documents) < 2:
        raise ValueError(f"objective mlm+nsp needs at least 2 training documents (separated by blank lines); "
                         f"corpus {data.corpus.name} has {len(data.train_documents)}")

    # ---- model, optimizer, masking, data stream
    if resume_checkpoint:
        state, optimizer_state = load_training_state(resume_checkpoint)
        model = (build_model(settings, resume_checkpoint) if build_model else
                 BertForPreTraining.from_pretrained(resume_checkpoint, seed=settings.seed))
        config = model.config
        if state.get("corpus") != corpus_fingerprint:
            raise ValueError(f"the corpus {', '.join(settings.corpus)} changed since {resume_checkpoint} was written "
                             f"(its files' hash differs): an exact resume needs the same text")
        if config.vocab_size != len(tok.vocab):
            raise ValueError(f"{resume_checkpoint}: the model has vocab_size {config.vocab_size} but its vocab.txt "
                             f"has {len(tok.vocab)} tokens")
    elif build_model:
        model = build_model(settings, None)
        config = model.config
    else:
        config = model_config(settings, len(tok.vocab))
        model = BertForPreTraining(config, seed=settings.seed)
    seq_len = sequence_length(settings, config)
    model.train()
    optimizer = AdamW(model.params, model.grads, lr=settings.lr, betas=settings.betas, eps=settings.eps,
                      weight_decay=settings.weight_decay)
    masker, eval_batches, top_token, baseline_acc = recipe_parts(settings, model, data, seq_len,
                                                                 fresh=not resume_checkpoint)
    stream = ExampleStream(data.train_documents, settings.objective, seq_len, settings.seed, tok.cls_token_id,
                           tok.sep_token_id, settings.short_seq_prob, fill=settings.packing == "full")

    # ---- where we start, how long we go
    window = Window()
    if resume_checkpoint:
        optimizer.load_state_dict(optimizer_state)
        model.rng.bit_generator.state = state["dropout_rng"]
        stream.load_state_dict(state["data"])
        window.load_state_dict(state["window"])
        plan = Plan(**{**state["plan"], "next_replan": None})  # a resumed run keeps its plan
        start_step, train_seconds, tokens_seen = state["step"], state["train_seconds"], state["tokens_seen"]
        metrics = MetricsLog(run_dir / "metrics.jsonl")
        metrics.truncate_after(start_step)
        log(f"resuming {run_dir} at step {start_step:,} of {plan.total_steps:,}")
    else:
        run_dir = create_run_dir(settings.runs_dir, settings.name or default_run_name(settings.config,
                                                                                     data.corpus.name))
        settings.name = run_dir.name
        _write_json(run_dir / "settings.json", settings.to_dict())
        start_step, train_seconds, tokens_seen = 0, 0.0, 0
        metrics = MetricsLog(run_dir / "metrics.jsonl")
        t_eval = time.perf_counter()
        metrics.append({"step": 0, "split": "eval", **evaluate(model, eval_batches, use_nsp), "elapsed": 0.0})
        eval_seconds = time.perf_counter() - t_eval
        if settings.steps:
            plan, how_long = make_plan(settings.steps, settings, timed=False), ""
        else:  # as many steps as fit in --minutes, measured on this machine
            probe = masked_batch(stream.peek(settings.batch_size), masker, tok.pad_token_id, np.random.default_rng(0))
            step_seconds = measure_step_seconds(model, probe, use_nsp) * settings.grad_accum
            plan = make_plan(steps_that_fit(settings.minutes * 60, step_seconds, eval_seconds), settings, timed=True)
            how_long = f" (for now: {step_seconds:.2f} s per step measured, {settings.minutes:g} minutes)"
        log(f"run folder: {run_dir}")
        log(f"model: {getattr(model, 'description', settings.config)}, {model.num_parameters():,} parameters; "
            f"objective {settings.objective}; "
            f"{plan.total_steps:,} steps{how_long} of {settings.batch_size * settings.grad_accum} x {seq_len} "
            f"tokens, peak lr {settings.lr:g}, warmup {plan.warmup_steps:,} steps")

    # ---- the loop
    desc = {"distill": "distilling"}.get(getattr(settings, "COMMAND", "pretrain"), "pre-training")
    bar = tqdm(total=plan.total_steps, initial=start_step, desc=desc, unit="step", disable=not progress,
               dynamic_ncols=True)
    say = bar.write if progress else log  # lines printed during training must not break the progress bar
    last_eval, stopped_early, done, step_times = None, None, start_step, []
    # With --minutes, a first session that runs far over its plan stops early (a resumed one just finishes).
    budget_seconds = settings.minutes * 60 if settings.steps is None and not resume_checkpoint else math.inf
    t_loop, elapsed_before = time.perf_counter(), state["elapsed"] if resume_checkpoint else 0.0

    def elapsed() -> float:  # wall seconds of training (all sessions of the run), for metrics.jsonl
        return round(elapsed_before + time.perf_counter() - t_loop, 3)

    grad_norm = 0.0
    try:
        step = start_step
        while step < plan.total_steps:
            t_step = time.perf_counter()
            lr = plan.lr(step)  # warmup, then linear decay to 0 at the last step
            model.zero_grad()
            # A blow-up (overflow, NaN) is detected just below and reported in one clear message instead.
            with np.errstate(over="ignore", invalid="ignore"):
                for micro in range(settings.grad_accum):
                    out = batch = None  # the last step's logits are not kept alive through this forward (memory)
                    rng = np.random.default_rng([settings.seed, MASKING_STREAM, step, micro])
                    batch = masked_batch(stream.take(settings.batch_size), masker, tok.pad_token_id, rng)
                    out = model.forward(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"],
                                        labels=batch["labels"],
                                        next_sentence_label=batch["next_sentence_label"] if use_nsp else None)
                    model.backward(loss_scale=1.0 / settings.grad_accum)
                    _accumulate(window, out, batch, use_nsp, settings.grad_accum)
                grad_norm = clip_grad_norm(model.grads, settings.clip)
                if not (math.isfinite(float(out.loss)) and math.isfinite(grad_norm)):
                    raise TrainingStopped(_nan_message(run_dir, step + 1, f"the loss ({float(out.loss)}) or gradient "
                                                       f"norm ({grad_norm}) is not a finite number", settings.lr))
                optimizer.step(lr)
            seconds = time.perf_counter() - t_step
            if step > start_step:  # the first step of a session pays for first-time allocations
                step_times.append(seconds)
            window.seconds += seconds
            window.steps += 1
            train_seconds += seconds
            tokens_seen += int(batch["attention_mask"].sum()) * settings.grad_accum
            step = done = step + 1
            bar.update(1)

            if done == plan.next_replan:  # --minutes: correct the number of steps from the recent step times
                old_total = plan.total_steps
                # The mean, not the median: the occasional slow step (a busy machine) costs time all the same.
                mean_step = sum(step_times) / len(step_times)
                plan = replan(plan, done, mean_step, budget_seconds - (time.perf_counter() - t_loop), eval_seconds,
                              settings)
                step_times = []
                bar.total = plan.total_steps
                if abs(plan.total_steps - old_total) > 0.02 * old_total:
                    say(f"step {done:>6,}  measured {mean_step:.2f} s per step: {plan.total_steps:,} steps fit in "
                        f"{settings.minutes:g} minutes (planned {old_total:,})")
            if done % settings.log_every == 0 or done == plan.total_steps:
                record = window.record(lr, grad_norm)
                metrics.append({"step": done, "split": "train", **record, "epoch": stream.epoch,
                                "elapsed": elapsed()})
                accuracy = {"acc": f"{record['mlm_acc']:.3f}"} if window.masked else {}  # none: hidden distillation
                bar.set_postfix(loss=f"{record['loss']:.3f}", **accuracy, tok_s=f"{record['tokens_per_s']:,.0f}",
                                lr=f"{lr:.2e}")
                window.reset()
            if done % plan.eval_every == 0 or done == plan.total_steps:
                last_eval = evaluate(model, eval_batches, use_nsp)
                metrics.append({"step": done, "split": "eval", **last_eval, "elapsed": elapsed()})
                say(_eval_line(done, last_eval))
            over_budget = (time.perf_counter() - t_loop > budget_seconds * BUDGET_OVERRUN
                           and done < plan.total_steps)
            if done % plan.save_every == 0 or done == plan.total_steps or over_budget:
                if not all(np.isfinite(p).all() for p in model.params.values()):
                    raise TrainingStopped(_nan_message(run_dir, done, "the weights are no longer finite numbers",
                                                       settings.lr))
                state = {"step": done, "plan": plan.state_dict(), "data": stream.state_dict(),
                         "dropout_rng": model.rng.bit_generator.state, "window": window.state_dict(),
                         "train_seconds": train_seconds, "tokens_seen": tokens_seen, "elapsed": elapsed(),
                         "corpus": corpus_fingerprint, "settings": settings.to_dict()}
                save_checkpoint(run_dir, done, model, tok, optimizer, state, settings.keep_checkpoints)
            if over_budget:
                stopped_early = (f"stopped at step {done:,} of {plan.total_steps:,}: training took longer than "
                                 f"planned (the machine got slower?); resume with --resume {run_dir}")
                say(stopped_early)
                break
    except KeyboardInterrupt:
        bar.close()
        latest = latest_checkpoint(run_dir)
        log(f"interrupted during step {done + 1:,}; " + (f"the latest checkpoint is {latest}; continue with: "
            f"minibert {getattr(settings, 'COMMAND', 'pretrain')} --resume {run_dir}" if latest else "no checkpoint was saved yet"))
        raise
    finally:
        bar.close()

    # ---- the end: final numbers, plot, summary
    if last_eval is None:
        last_eval = evaluate(model, eval_batches, use_nsp)
    summary = {
        "run": str(run_dir), "checkpoint": str(latest_checkpoint(run_dir)), "steps": done,
        "total_steps": plan.total_steps, "eval": last_eval, "baseline_token": tok.ids_to_tokens[top_token],
        "baseline_acc": baseline_acc, "wall_seconds": round(time.perf_counter() - t_start, 1),
        "prepare_seconds": round(data.seconds, 1), "train_seconds": round(train_seconds, 1),
        "tokens_seen": tokens_seen, "tokens_per_s": tokens_seen / max(train_seconds, 1e-9),
        "eval_sequences": sum(len(b["input_ids"]) for b in eval_batches), "stopped_early": stopped_early,
    }
    if settings.plot:
        summary["plot"] = _plot(run_dir, log)
    summary["peak_rss_mb"] = peak_rss_mb()  # the whole process so far: data preparation, training, plot
    _write_json(run_dir / "summary.json", summary)
    return summary


def _accumulate(window: Window, out, batch: dict, use_nsp: bool, grad_accum: int) -> None:
    targets = batch["labels"].reshape(-1)[out.masked_positions]  # (M,)
    window.loss += float(out.loss) / grad_accum
    window.mlm_loss += float(out.mlm_loss) / grad_accum
    window.correct += int((out.prediction_logits.argmax(axis=-1) == targets).sum())
    window.masked += len(targets)
    window.tokens += int(batch["attention_mask"].sum())
    for name, value in (out.get("parts") or {}).items():  # a distillation's separate losses
        window.parts[name] = window.parts.get(name, 0.0) + value / grad_accum
    if use_nsp:
        nsl = batch["next_sentence_label"]
        window.nsp_loss += float(out.nsp_loss) / grad_accum
        window.nsp_correct += int((out.seq_relationship_logits.argmax(axis=-1) == nsl).sum())
        window.pairs += len(nsl)


def _eval_line(step: int, m: dict) -> str:
    line = f"step {step:>6,}  held-out:"
    if m["masked_tokens"]:  # (a distillation of hidden states predicts no masked token)
        line += f" mlm loss {m['mlm_loss']:.3f}  ppl {m['ppl']:,.1f}  acc {m['mlm_acc']:.1%}"
    if "nsp_acc" in m:
        line += f"  nsp acc {m['nsp_acc']:.1%}"
    for name in sorted(k for k in m if k.endswith("_loss") and k not in ("mlm_loss", "nsp_loss")):
        line += f"  {name[:-5]} {m[name]:.4f}"
    return line


def _nan_message(run_dir: Path, step: int, problem: str, lr: float) -> str:
    latest = latest_checkpoint(run_dir)
    kept = (f"the last good checkpoint, {latest}, is kept (resume with --resume {run_dir})" if latest
            else "no checkpoint had been saved yet")
    return (f"training stopped at step {step:,}: {problem}; nothing from this step was saved; {kept}. "
            f"Try a lower --lr (was {lr:g}) or a longer --warmup")


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
