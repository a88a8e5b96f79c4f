"""An epoch's examples packed as they are made (no Python object per example kept) are exactly the examples
make_examples gives, in its order, for every objective."""

import numpy as np
import pytest

from minibert.data.examples import PackedExamples, make_examples, make_packed_examples


def documents(seed=0, n=40):
    rng = np.random.default_rng(seed)
    return [[rng.integers(5, 300, size=int(rng.integers(1, 30))) for _ in range(int(rng.integers(1, 6)))]
            for _ in range(n)]


@pytest.mark.parametrize("objective, fill", [("mlm", False), ("mlm", True), ("mlm+nsp", False),
                                             ("mlm+sop", False), ("electra", False)])
def test_packed_as_made_equals_packed_afterwards(objective, fill, monkeypatch):
    monkeypatch.setattr(PackedExamples, "CHUNK", 7)  # several chunks
    docs = documents()
    a = PackedExamples(make_examples(docs, objective, 32, np.random.default_rng(3), 2, 3, 0.1, fill))
    b = make_packed_examples(docs, objective, 32, np.random.default_rng(3), 2, 3, 0.1, fill)
    assert len(a) > 3 * 7
    assert np.array_equal(a.starts, b.starts) and np.array_equal(a.fields, b.fields)
    assert a.tokens.dtype == b.tokens.dtype == np.uint16 and np.array_equal(a.tokens, b.tokens)


def test_large_ids_stay_int64():
    docs = [[np.array([70000, 5, 6])], [np.array([7, 8])]]
    b = make_packed_examples(docs, "mlm", 16, np.random.default_rng(0), 2, 3)
    assert b.tokens.dtype == np.int64 and 70000 in b.tokens
