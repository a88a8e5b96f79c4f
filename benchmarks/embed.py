"""Sentences per second: embedding Wikipedia sentences with all-MiniLM-L6-v2, minibert against transformers.

    python benchmarks/embed.py                       # 1,000 sentences, batch 32, all cores
    python benchmarks/embed.py --threads 1 --rounds 5
    python benchmarks/embed.py --gelu both           # minibert with the NumPy GELU and with numba's, side by side

Both sides do the same work, on the same cores, in one run: tokenize, sort by length, batch, pad each batch
to its longest sentence, run BertModel, mean-pool over the attention mask, L2-normalise.
  minibert:     minibert.embeddings.SentenceEncoder (pure-Python WordPiece tokenizer, NumPy model); with
                --threads N it runs N batches at once, one per thread, each on a one-thread BLAS
                (minibert/parallel.py; --workers 1: one batch at a time on an N-thread BLAS)
                its exact GELU in NumPy or, with numba installed, compiled (minibert/layers/gelu_numba.py);
                --gelu both times the two as separate contenders
  transformers: BertTokenizerFast (Rust) + transformers.BertModel (torch eager, its default attention)
minibert runs with freed memory kept in the process (minibert.keep_freed_memory(), as the CLI sets it; the
forward's large temporaries are then reused instead of page-faulted in again); --default-malloc leaves glibc's
malloc as it is, as in a Python program that does not call it.
Rounds alternate between the two so a noisy machine slows both alike. Prints the best round of each (total, and
tokenization / model split), the ratio of each minibert contender / transformers in sentences per second (>1:
minibert faster), and the cosine agreement of the two sets of embeddings.
Also the matmul floor: the model's products alone (every layer's q/k/v, output and feed-forward projections and
attention's batched products, on the same padded batches, run the way minibert runs its batches), timed in the
same rounds. No NumPy implementation on this BLAS embeds faster than that, so transformers' model time over the
floor is the highest model-only ratio reachable here.
"""

import argparse
import os
import re
import time


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sentences", type=int, default=1000, help="how many Wikipedia sentences (default 1000)")
    p.add_argument("--batch-size", type=int, default=32, help="sentences per forward pass (default 32)")
    p.add_argument("--threads", type=int, default=int(os.environ.get("OPENBLAS_NUM_THREADS", os.cpu_count())),
                   help="BLAS/torch threads for both (default: OPENBLAS_NUM_THREADS or all cores)")
    p.add_argument("--rounds", type=int, default=3, help="timed rounds per contender, alternating (default 3)")
    p.add_argument("--workers", type=int, default=None,
                   help="minibert's batches run at once, each on its own thread (default: --threads; 1: one batch "
                        "at a time on a --threads-thread BLAS, to see what running batches side by side buys)")
    p.add_argument("--gelu", choices=["auto", "numpy", "numba", "both"], default="auto",
                   help="minibert's exact GELU: auto (numba's if installed, as MINIBERT_NUMBA says), numpy, numba, "
                        "or both as two contenders (default auto)")
    p.add_argument("--profile", action="store_true", help="also print where minibert's forward spends its time")
    p.add_argument("--default-malloc", action="store_true",
                   help="leave glibc's malloc as it is (what a Python program that does not call "
                        "minibert.keep_freed_memory() gets); default: keep freed memory, as the minibert CLI does")
    return p.parse_args()


args = parse_args()
# Thread counts must be set before NumPy and torch load their BLAS.
os.environ["OPENBLAS_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = str(args.threads)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402

from minibert.data.builtin import load_wiki_summaries, minilm_dir  # noqa: E402
from minibert.embeddings import SentenceEncoder, pad_batch  # noqa: E402
from minibert.layers.gelu_select import gelu_kernel_name, use_numba_gelu  # noqa: E402
from minibert import keep_freed_memory  # noqa: E402

torch.set_num_threads(args.threads)


def wiki_sentences(n):
    """The first n sentences (20..300 characters) of the Wikipedia summaries, in file order."""
    out = []
    for summary in load_wiki_summaries():
        for s in re.split(r"(?<=[.!?])\s+", summary["extract"]):
            if 20 <= len(s) <= 300:
                out.append(s)
                if len(out) == n:
                    return out
    return out


def minibert_embed(encoder, texts, batch_size, workers, gelu):
    use_numba_gelu(gelu == "numba")
    t0 = time.perf_counter()
    ids = encoder.tokenize(texts)
    t1 = time.perf_counter()
    out = encoder.encode_token_ids(ids, batch_size, normalize=True, workers=workers)
    return out, t1 - t0, time.perf_counter() - t1


def padded_batches(token_ids, batch_size):
    """The (B, T) of every batch as SentenceEncoder.encode_token_ids makes them: longest first, padded to the
    longest."""
    lengths = sorted((len(ids) for ids in token_ids), reverse=True)
    return [(len(chunk), chunk[0]) for chunk in (lengths[s:s + batch_size] for s in range(0, len(lengths), batch_size))]


def matmul_floor(config, shapes, workers):
    """A callable running the forward products of every batch's encoder: per layer the fused q/k/v, the attention
    output and the two feed-forward projections over all B*T rows, and attention's scores and context products,
    batches on `workers` threads as minibert runs them (minibert/parallel.py). Its inputs are made once, outside
    the timing."""
    from minibert.parallel import map_batches
    H, F, A, L = config.hidden_size, config.intermediate_size, config.num_attention_heads, config.num_hidden_layers
    r = np.random.default_rng(0)
    f = lambda *s: r.standard_normal(s).astype(np.float32)  # noqa: E731
    w_qkv, w_o, w_in, w_out = f(H, 3 * H), f(H, H), f(H, F), f(F, H)
    inputs = {(B, T): (f(B * T, H), f(B * T, F), f(B, A, T, H // A), f(B, A, H // A, T), f(B, A, T, T))
              for B, T in set(shapes)}

    def batch(shape):
        x, h, q, kt, p = inputs[shape]
        for _ in range(L):
            x @ w_qkv, x @ w_o, x @ w_in, h @ w_out, q @ kt, p @ q  # (p @ q: context = probs @ v, same shapes)
    return lambda: list(map_batches(batch, shapes, workers))


def transformers_embed(tokenizer, model, texts, batch_size, max_length):
    t0 = time.perf_counter()
    ids = tokenizer(texts, truncation=True, max_length=max_length)["input_ids"]
    t1 = time.perf_counter()
    out = torch.zeros(len(texts), model.config.hidden_size)
    order = sorted(range(len(texts)), key=lambda i: -len(ids[i]))
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            rows = order[start:start + batch_size]
            input_ids, mask = pad_batch([ids[i] for i in rows], tokenizer.pad_token_id)
            input_ids, mask = torch.from_numpy(input_ids), torch.from_numpy(mask)
            hidden = model(input_ids=input_ids, attention_mask=mask).last_hidden_state
            m = mask[:, :, None].to(hidden.dtype)
            out[rows] = (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)
        out = torch.nn.functional.normalize(out, dim=1)
    return out.numpy(), t1 - t0, time.perf_counter() - t1


def main():
    if not args.default_malloc:
        keep_freed_memory()  # as `minibert embed` does: freed activations are reused, not page-faulted in again
    folder = minilm_dir()
    texts = wiki_sentences(args.sentences)
    encoder = SentenceEncoder.from_pretrained(folder)
    tokenizer = transformers.BertTokenizerFast.from_pretrained(folder)
    model = transformers.BertModel.from_pretrained(folder).eval()
    n_tokens = sum(len(x) for x in encoder.tokenize(texts))
    print(f"{len(texts)} sentences, {n_tokens} tokens (mean {n_tokens / len(texts):.1f}), batch {args.batch_size}, "
          f"{args.threads} thread(s), OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(auto)')}, "
          f"torch attention: {model.config._attn_implementation}, malloc: "
          f"{'default' if args.default_malloc else 'keep_freed_memory (as the CLI)'}")
    kernels = {"auto": [gelu_kernel_name()], "both": ["numpy", "numba"]}.get(args.gelu, [args.gelu])
    print(f"minibert's exact GELU: {', '.join(kernels)} (--gelu {args.gelu}; MINIBERT_NUMBA="
          f"{os.environ.get('MINIBERT_NUMBA', '(unset)')})")

    # Warm-up (first calls allocate, fill the tokenizer cache, load kernels), then alternate timed rounds.
    for k in kernels:
        minibert_embed(encoder, texts[:64], args.batch_size, args.workers, k)
    transformers_embed(tokenizer, model, texts[:64], args.batch_size, encoder.max_length)
    names = [f"minibert ({k} GELU)" for k in kernels]
    results = {name: [] for name in names + ["transformers"]}
    shapes = padded_batches(encoder.tokenize(texts), args.batch_size)
    padded_tokens = sum(B * T for B, T in shapes)
    floor_run = matmul_floor(encoder.model.config, shapes, args.workers)
    floor_run()
    floor_times = []
    ours = {}
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        floor_run()
        floor_times.append(time.perf_counter() - t0)
        for k, name in zip(kernels, names):
            ours[name] = minibert_embed(encoder, texts, args.batch_size, args.workers, k)
            results[name].append(ours[name][1:])
        theirs = transformers_embed(tokenizer, model, texts, args.batch_size, encoder.max_length)
        results["transformers"].append(theirs[1:])

    best = {}
    for name, rounds in results.items():
        tok, fwd = min(rounds, key=sum)
        best[name] = tok + fwd
        print(f"{name:>22}: {len(texts) / (tok + fwd):8.1f} sentences/s   (tokenize {tok * 1000:7.1f} ms, "
              f"model + pooling {fwd * 1000:8.1f} ms)")
    for name in names:
        model_only = min(r[1] for r in results["transformers"]) / min(r[1] for r in results[name])
        print(f"ratio {name} / transformers (sentences per second): {best['transformers'] / best[name]:.2f} "
              f"overall, {model_only:.2f} model only")
        cosines = (ours[name][0].astype(np.float64) * theirs[0]).sum(axis=1)
        print(f"  agreement: min cosine between the two embeddings {cosines.min():.7f}")

    theirs_model = min(r[1] for r in results["transformers"])
    floor = min(floor_times)
    print(f"matmul floor: the model's products alone {floor * 1000:.1f} ms = {floor / theirs_model:.2f} of "
          f"transformers' model + pooling: no NumPy implementation on this BLAS gets above "
          f"{theirs_model / floor:.2f}x its model-only throughput here ({padded_tokens} rows with padding, "
          f"{n_tokens} without: {padded_tokens / n_tokens - 1:.1%} more)")

    if args.profile:
        profile_forward(encoder, texts)


def profile_forward(encoder, texts):
    """Top functions by own time over one pass of the minibert model (tokenization excluded)."""
    import cProfile
    import pstats
    ids = encoder.tokenize(texts)
    profiler = cProfile.Profile()
    order = sorted(range(len(texts)), key=lambda i: -len(ids[i]))
    profiler.enable()
    for start in range(0, len(order), args.batch_size):
        rows = order[start:start + args.batch_size]
        input_ids, mask = pad_batch([ids[i] for i in rows], encoder.pad_id)
        encoder.body.forward(input_ids, attention_mask=mask)
    profiler.disable()
    pstats.Stats(profiler).sort_stats("tottime").print_stats(15)


if __name__ == "__main__":
    main()
