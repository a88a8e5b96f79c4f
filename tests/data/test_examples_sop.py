"""ALBERT's sentence-order pairs (--objective mlm+sop): two consecutive segments of one document, swapped half
of the time, label 1 when swapped."""

import numpy as np
from test_examples_nsp import CLS, SEP, make_documents, segments

from minibert.data.examples import collate, make_examples, nsp_examples


def test_sop_pairs_come_from_one_document_in_order_or_swapped():
    docs, where = make_documents()
    examples = nsp_examples(docs, 32, np.random.default_rng(0), CLS, SEP, sentence_order=True)
    assert len(examples) > 150
    assert 0.4 < np.mean([e.is_random_next for e in examples]) < 0.6
    for e in examples:
        a, b = segments(e)
        assert a and b and len(e.tokens) <= 32
        first, second = (b, a) if e.is_random_next else (a, b)  # undo the swap
        assert {where[t][0] for t in first + second} == {e.doc} == {e.other_doc}  # never another document
        # the first segment's tokens all come before the second's in the document: (sentence, position) order
        assert max(where[t][1:] for t in first) < min(where[t][1:] for t in second), e


def test_sop_batches_carry_the_order_label_and_two_segments():
    docs, _ = make_documents(60, seed=1)
    examples = make_examples(docs, "mlm+sop", 24, np.random.default_rng(3), CLS, SEP)
    batch = collate(examples[:16], pad_id=0)
    assert set(batch["next_sentence_label"].tolist()) == {0, 1}
    for row, e in enumerate(examples[:16]):
        assert batch["token_type_ids"][row, e.num_a - 1] == 0 and batch["token_type_ids"][row, e.num_a] == 1
