"""Pre-train the reference, transformers' BertForMaskedLM on torch, with minibert's data, recipe and evaluation.

Same corpus, tokenizer, examples, dynamic masks (train mask rate from --mask-prob), held-out set with fixed 15%
masks, initial weights (minibert's init for --seed, copied in by name), AdamW settings, learning-rate plan,
clipping and MLM output-bias init as `minibert pretrain` with the same options. So the held-out numbers are
comparable with a minibert run's, and the difference between the two is only the engine:

    python benchmarks/pretrain_reference.py --minutes 13 --threads 2     # the reference at equal wall time
    python benchmarks/pretrain_reference.py --steps 3000 --device cuda   # a recipe experiment at a step count

With --device cuda it is a fast stand-in for recipe experiments (the arithmetic is the same as minibert's, which
the parity tests prove step by step), used to choose the defaults in docs/pretraining.md; every default chosen
that way was then confirmed by a real `minibert pretrain` run. Options are those of `minibert pretrain` plus the
ones below. Prints one line per evaluation and appends them as JSON to --out.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import os
import sys
import time


def parse_args():
    from minibert.commands.pretrain import add_arguments
    p = argparse.ArgumentParser(description=__doc__)
    add_arguments(p)
    p.description = __doc__
    p.add_argument("--device", default="cpu", help="torch device: cpu or cuda [cpu]")
    p.add_argument("--threads", type=int, default=None, help="torch threads on the CPU [all cores]")
    p.add_argument("--dense-decoder", action="store_true",
                   help="run the MLM decoder at every position, as BertForMaskedLM does by default (the loss is "
                        "the same; only slower). Default: only at the masked positions, as minibert")
    p.add_argument("--label", default="", help="a name for this run in the output")
    p.add_argument("--out", default=None, help="append evaluation lines (JSON) to this file")
    return p.parse_args()


def main():
    args = parse_args()
    if args.threads:
        os.environ["OPENBLAS_NUM_THREADS"] = str(args.threads)
    import numpy as np
    import torch
    import transformers

    from minibert.commands.pretrain import _given
    from minibert.data.prepare import prepare_data
    from minibert.models import BertForPreTraining
    from minibert.training.budget import make_plan, replan
    from minibert.training.pretrain import (MASKING_STREAM, masked_batch, model_config, recipe_parts, sequence_length,
                                           training_stream)
    from minibert.training.settings import PretrainSettings

    if args.threads:
        torch.set_num_threads(args.threads)
    torch.backends.cuda.matmul.allow_tf32 = False  # float32 arithmetic, as minibert's
    torch.backends.cudnn.allow_tf32 = False
    settings = PretrainSettings(**_given(args))
    settings.validate()
    dev = torch.device(args.device)
    data = prepare_data(settings.corpus, settings.text_field, settings.tokenizer, settings.vocab_size,
                        settings.eval_fraction, progress=False, log=lambda *a: None)
    tok = data.tokenizer
    config = model_config(settings, len(tok.vocab))
    seq_len = sequence_length(settings, config)
    init = BertForPreTraining(config, seed=settings.seed)  # minibert's initial weights, for identical starts
    masker, eval_batches = recipe_parts(settings, init, data, seq_len)[:2]
    stream = training_stream(settings, data, seq_len)  # the same batches as minibert pretrain's

    hf_config = transformers.BertConfig(**{k: v for k, v in config.to_dict().items() if k != "model_type"})
    model = transformers.BertForMaskedLM(hf_config)
    state = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in init.params.items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [k for k in missing if not k.startswith("cls.predictions.decoder")]
    if missing:
        sys.exit(f"reference: weights not copied from minibert's init: {missing}")
    model.tie_weights()
    model.to(dev).train()

    no_decay = [p for n, p in model.named_parameters() if n.endswith("bias") or "LayerNorm" in n]
    decay = [p for n, p in model.named_parameters() if not (n.endswith("bias") or "LayerNorm" in n)]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": settings.weight_decay},
                                   {"params": no_decay, "weight_decay": 0.0}],
                                  lr=settings.lr, betas=settings.betas, eps=settings.eps)

    def to_dev(batch):
        return {k: torch.from_numpy(v).to(dev) for k, v in batch.items()}

    def loss_and_logits(m, b):
        if args.dense_decoder:
            out = m(input_ids=b["input_ids"], token_type_ids=b["token_type_ids"], attention_mask=b["attention_mask"])
            labels = b["labels"].view(-1)
            pos = (labels != -100).nonzero().squeeze(1)
            logits = out.logits.view(-1, config.vocab_size)[pos]
        else:  # sparse prediction, as minibert: the decoder only where there is something to predict
            hidden = m.bert(input_ids=b["input_ids"], token_type_ids=b["token_type_ids"],
                            attention_mask=b["attention_mask"])[0]
            labels = b["labels"].view(-1)
            pos = (labels != -100).nonzero().squeeze(1)
            logits = m.cls(hidden.reshape(-1, config.hidden_size)[pos])
        targets = labels[pos]
        return torch.nn.functional.cross_entropy(logits, targets), logits, targets

    def evaluate():
        model.eval()
        loss_sum, correct, n = 0.0, 0, 0
        with torch.no_grad():
            for batch in eval_batches:
                loss, logits, targets = loss_and_logits(model, to_dev(batch))
                loss_sum += float(loss) * len(targets)
                correct += int((logits.argmax(-1) == targets).sum())
                n += len(targets)
        model.train()
        return {"mlm_loss": loss_sum / n, "ppl": math.exp(min(loss_sum / n, 700)), "mlm_acc": correct / n}

    def train_step(step, lr, m=model, opt=optimizer, stream=stream):
        for group in opt.param_groups:
            group["lr"] = lr
        opt.zero_grad(set_to_none=False)
        rng = np.random.default_rng([settings.seed, MASKING_STREAM, step, 0])
        batch = to_dev(masked_batch(stream.take(settings.batch_size), masker, tok.pad_token_id, rng))
        loss, _, _ = loss_and_logits(m, batch)
        loss.backward()
        if settings.clip:
            torch.nn.utils.clip_grad_norm_(m.parameters(), settings.clip)
        opt.step()
        return float(loss.detach())

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize()

    t0 = time.perf_counter()
    first = evaluate()
    eval_seconds = time.perf_counter() - t0
    if settings.steps:
        plan = make_plan(settings.steps, settings, timed=False)
    else:  # time a few steps on copies (the run itself is not changed), as minibert does
        probe_model, probe_stream = copy.deepcopy(model), copy.deepcopy(stream)
        probe_opt = torch.optim.AdamW(probe_model.parameters(), lr=0.0)
        times = []
        for i in range(4):
            sync()
            t = time.perf_counter()
            train_step(i, 0.0, probe_model, probe_opt, probe_stream)
            sync()
            times.append(time.perf_counter() - t)
        del probe_model, probe_opt
        from minibert.training.budget import steps_that_fit
        plan = make_plan(steps_that_fit(settings.minutes * 60, sorted(times[1:])[1], eval_seconds), settings,
                         timed=True)
    out = open(args.out, "a") if args.out else None

    def record(step, metrics, elapsed):
        line = {"label": args.label, "engine": "transformers", "device": args.device, "step": step,
                "elapsed": round(elapsed, 1), **metrics}
        print(f"{args.label} step {step:>6}  elapsed {elapsed:7.1f}s  held-out acc {metrics['mlm_acc']:.2%}  "
              f"ppl {metrics['ppl']:9.1f}", flush=True)
        if out:
            out.write(json.dumps(line) + "\n")
            out.flush()

    record(0, first, 0.0)
    t_loop, step_times, step, loss = time.perf_counter(), [], 0, float("nan")
    while step < plan.total_steps:
        t = time.perf_counter()
        loss = train_step(step, plan.lr(step))  # float(loss) waits for the device: the time is real
        step_times.append(time.perf_counter() - t)
        step += 1
        if not math.isfinite(loss):
            record(step, {"mlm_loss": loss, "ppl": float("inf"), "mlm_acc": 0.0, "diverged": True},
                   time.perf_counter() - t_loop)
            break
        if step == plan.next_replan:
            elapsed = time.perf_counter() - t_loop
            plan = replan(plan, step, sum(step_times) / len(step_times), settings.minutes * 60 - elapsed,
                          eval_seconds, settings)
            step_times = []
        if step % plan.eval_every == 0 or step == plan.total_steps:
            record(step, evaluate(), time.perf_counter() - t_loop)
    if out:
        out.close()


if __name__ == "__main__":
    main()
