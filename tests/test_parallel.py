"""Batches side by side on threads (minibert/parallel.py): every result, in order; the calls really overlap;
inside them BLAS stays on the calling thread; errors and early stops are handled."""

import os
import subprocess
import sys
import threading

import numpy as np
import pytest

from minibert import blas, parallel
from minibert.parallel import map_batches

needs_openblas = pytest.mark.skipif(blas.blas_threads() is None, reason="NumPy's BLAS here is not an OpenBLAS")


@pytest.mark.parametrize("workers", [1, 2, 3, 5])
@pytest.mark.parametrize("n", [0, 1, 2, 7])
def test_every_result_in_order(workers, n):
    assert list(map_batches(lambda x: x * x, range(n), workers)) == [x * x for x in range(n)]


@pytest.mark.parametrize("workers", [0, -1, 1.5, "2"])
def test_workers_must_be_a_positive_integer(workers):
    with pytest.raises(ValueError, match="workers must be a positive integer"):
        list(map_batches(abs, [1, 2], workers))


@needs_openblas
def test_calls_run_at_the_same_time():
    both_inside = threading.Barrier(2, timeout=10)  # passes only if two calls are running at once

    def fn(x):
        both_inside.wait()
        return x

    assert list(map_batches(fn, [1, 2], workers=2)) == [1, 2]


@needs_openblas
def test_inside_a_call_blas_uses_the_calling_thread():
    get, put = blas._openblas_functions()
    before = get()
    put(2)
    try:
        assert list(map_batches(lambda x: blas.blas_threads(), range(4), workers=2)) == [1] * 4
        assert blas.blas_threads() == 2  # restored
    finally:
        put(before)


@needs_openblas
def test_an_error_is_raised_in_its_turn_and_nothing_more_starts():
    started = []

    def fn(x):
        started.append(x)
        if x == 1:
            raise KeyError("batch 1")
        return x

    results = map_batches(fn, range(20), workers=2)
    assert next(results) == 0
    with pytest.raises(KeyError, match="batch 1"):
        next(results)
    assert len(started) <= 4  # the two running and at most the next two: not all 20
    assert not [t for t in threading.enumerate() if t.name.startswith("minibert-batch")]


@needs_openblas
def test_a_caller_that_stops_early_leaves_no_threads():
    results = map_batches(lambda x: np.ones(3) * x, range(50), workers=3)
    assert next(results)[0] == 0
    results.close()
    assert not [t for t in threading.enumerate() if t.name.startswith("minibert-batch")]


# A child process (keep_freed_memory() as the CLI sets it): RSS before and after a threaded evaluation (or
# embedding) whose batches allocate ~180 MB of activations in the worker threads' malloc arenas, and again after
# one more hand-back: what that one still finds was freed and kept (map_batches' own hand-back missing, or too
# early). argv[2] "none" takes map_batches' hand-back away, to show that the check sees the difference.
ARENAS = """
import sys
import numpy as np
import minibert.parallel
from minibert._malloc import keep_freed_memory, release_freed_memory
keep_freed_memory()
if sys.argv[2] == "none":
    minibert.parallel.release_freed_memory = lambda collect=True: False
from minibert import BertConfig, BertModel, WordPieceTokenizer
from minibert.embeddings import SentenceEncoder
from minibert.finetune.train import predict_logits
from minibert.models.classification import BertForSequenceClassification
def rss():
    return [int(line.split()[1]) / 1e3 for line in open("/proc/self/status") if line.startswith("VmRSS")][0]
config = BertConfig(vocab_size=100, hidden_size=384, num_hidden_layers=2, num_attention_heads=12,
                    intermediate_size=1536, max_position_embeddings=128)
rng = np.random.default_rng(0)
encoded = [(rng.integers(5, 100, size=128), np.zeros(128, dtype=np.int64)) for _ in range(64)]
if sys.argv[1] == "evaluate":
    model = BertForSequenceClassification(config, num_labels=2)
    run = lambda n, workers: predict_logits(model, encoded[:n], 0, batch_size=32, workers=workers)
else:
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(95)]
    encoder = SentenceEncoder(BertModel(config, add_pooling_layer=False), WordPieceTokenizer(tokens))
    ids = [[int(i) for i in ids] for ids, _ in encoded]
    run = lambda n, workers: encoder.encode_token_ids(ids[:n], batch_size=32, workers=workers)
run(1, 1)  # loads numba's GELU, if installed, before `before`
before = rss()
run(64, 2)
after = rss()
release_freed_memory(collect=False)
print(before, after, rss())
"""


@needs_openblas
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's arenas, /proc/self/status")
@pytest.mark.parametrize("task", ["evaluate", "embed"])
def test_memory_the_worker_threads_freed_is_handed_back(task):
    # Each worker thread allocates from its own glibc arena, which keeps what it frees under keep_freed_memory():
    # without the hand-back at the end of map_batches the process keeps ~120-180 MB here after the batches.
    # (RSS may also keep growing by whole 64 MB arena heaps that no hand-back can return, depending on how the
    # threads were scheduled; that growth is the same with or without the hand-back, so it is not measured.)
    def kept(variant):
        result = subprocess.run([sys.executable, "-c", ARENAS, task, variant], capture_output=True, text=True,
                                check=True, env={**os.environ, "OPENBLAS_NUM_THREADS": "2"})
        before, after, handed_back_again = (float(x) for x in result.stdout.split())
        return after - handed_back_again  # MB freed by the batches and still held after map_batches

    assert kept("hand-back") < 8  # nothing left for a second hand-back
    assert kept("none") > 50  # without map_batches' hand-back, the batches' memory stays


@needs_openblas
def test_the_hand_back_runs_no_garbage_collection(monkeypatch):
    # A full gc pass costs time in proportion to every object the process holds (0.6 s with 3 million, as in a
    # notebook with a large data frame), and map_batches runs on every multi-batch encode: the batches leave no
    # cycles, so it must trim malloc's free memory without collecting.
    import gc
    calls = []
    monkeypatch.setattr(gc, "collect", lambda *a: calls.append(a) or 0)
    assert list(map_batches(abs, [-1, -2, -3], workers=2)) == [1, 2, 3]
    assert calls == []


def test_lent_cores_multiply_the_default_workers(monkeypatch):
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")
    monkeypatch.setattr(parallel, "usable_cpu_count", lambda: 8)
    assert parallel.default_workers() == 1
    with parallel.cores_lent(3):
        assert parallel.default_workers() == 3
    assert parallel.default_workers() == 1
