import numpy as np
import pytest

from minibert.data.examples import ExampleStream, collate, full_sentence_examples, make_examples, nsp_examples

CLS, SEP, PAD = 2, 3, 0


def make_documents(n_docs=200, seed=0):
    """Token ids that say where they come from: document d, sentence s, token j -> a unique id, so any token
    of an example can be traced back to its document and position."""
    rng = np.random.default_rng(seed)
    docs, where = [], {}
    next_id = 10
    for d in range(n_docs):
        doc = []
        for s in range(int(rng.integers(1, 7))):
            sentence = np.arange(next_id, next_id + int(rng.integers(1, 15)))
            for pos, t in enumerate(sentence):
                where[int(t)] = (d, s, pos)
            next_id += len(sentence)
            doc.append(sentence)
        docs.append(doc)
    return docs, where


def segments(example):
    t = example.tokens.tolist()
    assert t[0] == CLS and t[example.num_a - 1] == SEP and t[-1] == SEP
    return t[1:example.num_a - 1], t[example.num_a:-1]


def test_nsp_pairs_are_half_random_and_random_b_comes_from_another_document():
    docs, where = make_documents()
    examples = nsp_examples(docs, 32, np.random.default_rng(0), CLS, SEP)
    random_share = np.mean([e.is_random_next for e in examples])
    assert 0.45 < random_share < 0.55, random_share
    for e in examples:
        a, b = segments(e)
        assert a and b and len(e.tokens) <= 32
        a_docs = {where[t][0] for t in a}
        b_docs = {where[t][0] for t in b}
        assert a_docs == {e.doc}
        if e.is_random_next:
            assert b_docs == {e.other_doc} and e.other_doc != e.doc
        else:
            assert b_docs == {e.doc}
            # the real next segment continues the document: B's first token comes after A's last one
            assert where[b[0]][1:] > where[a[-1]][1:]


def test_real_next_segments_are_contiguous_when_not_truncated():
    docs, where = make_documents()
    examples = nsp_examples(docs, 64, np.random.default_rng(1), CLS, SEP, short_seq_prob=0.0)
    flat = {t: i for doc in docs for i, t in enumerate(t for s in doc for t in s.tolist())}
    for e in examples:
        if not e.is_random_next and len(e.tokens) < 64:
            a, b = segments(e)
            order = [flat[t] for t in a + b]
            assert order == list(range(order[0], order[0] + len(order)))


def test_short_seq_prob_makes_some_sequences_short():
    docs, _ = make_documents(400)
    long_only = nsp_examples(docs, 32, np.random.default_rng(0), CLS, SEP, short_seq_prob=0.0)
    with_short = nsp_examples(docs, 32, np.random.default_rng(0), CLS, SEP, short_seq_prob=0.5)
    assert np.mean([len(e.tokens) for e in with_short]) < np.mean([len(e.tokens) for e in long_only])


def test_full_sentences_use_every_token_once_per_epoch():
    docs, _ = make_documents()
    docs[3].append(np.arange(5000, 5050))  # a sentence longer than a whole sequence: cut, nothing lost
    examples = full_sentence_examples(docs, 24, np.random.default_rng(0), CLS, SEP)
    tokens = [t for e in examples for t in e.tokens.tolist() if t not in (CLS, SEP)]
    expected = [t for doc in docs for s in doc for t in s.tolist()]
    assert sorted(tokens) == sorted(expected)
    assert all(len(e.tokens) <= 24 and e.tokens[0] == CLS and e.tokens[-1] == SEP for e in examples)
    assert all(e.is_random_next == -1 for e in examples)
    # packing wastes little room (sentences here are up to 14 of the 22 free places long)
    assert np.mean([len(e.tokens) for e in examples]) > 0.7 * 24


def test_full_packing_fills_every_sequence_and_keeps_the_text_in_order():
    docs, where = make_documents()
    examples = full_sentence_examples(docs, 24, np.random.default_rng(0), CLS, SEP, fill=True)
    whole = full_sentence_examples(docs, 24, np.random.default_rng(0), CLS, SEP)
    # Full, but for the very last one and a document boundary at the very end (its [SEP] is the closing one).
    assert all(len(e.tokens) >= 23 for e in examples[:-1])
    assert np.mean([len(e.tokens) == 24 for e in examples]) > 0.9
    assert all(e.tokens[0] == CLS and e.tokens[-1] == SEP for e in examples)
    # The same text in the same order as whole-sentence packing, only cut differently: nothing lost or repeated.
    tokens = [t for e in examples for t in e.tokens.tolist() if t not in (CLS, SEP)]
    assert tokens == [t for e in whole for t in e.tokens.tolist() if t not in (CLS, SEP)]
    assert len(examples) < 0.85 * len(whole)  # less padding: fewer, fuller sequences for the same text
    # Some sentences are cut: a sentence's tokens continue at the start of the next sequence.
    firsts = [where[int(e.tokens[1])] for e in examples[1:] if e.tokens[1] in where]
    assert any(pos > 0 for _, _, pos in firsts)
    # Whole-sentence packing never starts a sequence inside a sentence (none is longer than a sequence here).
    assert all(where[int(e.tokens[1])][2] == 0 for e in whole)


def test_collate_pads_and_sets_segments():
    docs, _ = make_documents(20)
    examples = make_examples(docs, "mlm+nsp", 16, np.random.default_rng(0), CLS, SEP)[:4]
    batch = collate(examples, PAD)
    for row, e in enumerate(examples):
        n = len(e.tokens)
        assert (batch["input_ids"][row, :n] == e.tokens).all() and (batch["input_ids"][row, n:] == PAD).all()
        assert (batch["attention_mask"][row] == (np.arange(batch["input_ids"].shape[1]) < n)).all()
        types = batch["token_type_ids"][row]
        assert (types[:e.num_a] == 0).all() and (types[e.num_a:n] == 1).all()
    assert list(batch["next_sentence_label"]) == [e.is_random_next for e in examples]


@pytest.mark.parametrize("objective", ["mlm", "mlm+nsp"])
def test_stream_is_deterministic_and_resumes_from_its_state(objective):
    docs, _ = make_documents(50)
    a = ExampleStream(docs, objective, 24, seed=3, cls_id=CLS, sep_id=SEP)
    first = [e.tokens.tolist() for e in a.take(len(a) + 25)]  # crosses into epoch 1
    state = a.state_dict()
    assert state["epoch"] == 1
    rest = [e.tokens.tolist() for e in a.take(40)]
    b = ExampleStream(docs, objective, 24, seed=3, cls_id=CLS, sep_id=SEP)
    assert [e.tokens.tolist() for e in b.take(len(first))] == first
    c = ExampleStream(docs, objective, 24, seed=3, cls_id=CLS, sep_id=SEP)
    c.load_state_dict(state)
    assert [e.tokens.tolist() for e in c.take(40)] == rest
    # a new epoch is a new order (and, for NSP, new pairs)
    assert first[:len(a)] != first[len(a):] or len(a) < 2


@pytest.mark.parametrize("objective", ["mlm", "mlm+nsp"])
def test_packed_examples_give_back_equal_examples(objective):
    from minibert.data.examples import PackedExamples
    docs, _ = make_documents(40)
    examples = make_examples(docs, objective, 24, np.random.default_rng(5), CLS, SEP)
    packed = PackedExamples(examples)
    assert len(packed) == len(examples)
    for i in (0, len(examples) // 2, len(examples) - 1, -1):
        e, p = examples[i], packed[i]
        assert p.tokens.dtype == np.int64 and p.tokens.tolist() == e.tokens.tolist()
        assert (p.num_a, p.is_random_next, p.doc, p.other_doc) == (e.num_a, e.is_random_next, e.doc, e.other_doc)
    assert [e.tokens.tolist() for e in packed[3:7]] == [e.tokens.tolist() for e in examples[3:7]]
    big = [e.__class__(e.tokens + 70_000, e.num_a, e.is_random_next, e.doc, e.other_doc) for e in examples[:3]]
    assert PackedExamples(big)[2].tokens.tolist() == big[2].tokens.tolist()  # ids past uint16 are kept whole
