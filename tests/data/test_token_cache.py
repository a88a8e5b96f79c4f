import numpy as np

from minibert.data.cache import cache_root, tokenize_corpus
from minibert.data.corpus import load_corpus
from minibert.data.prepare import prepare_data
from pretrain_helpers import synthetic_documents, write_corpus


def test_token_ids_are_cached_as_plain_npy_and_reused(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIBERT_CACHE", str(tmp_path / "cache"))
    path = write_corpus(tmp_path / "c.txt", synthetic_documents(60))
    first = prepare_data([str(path)], vocab_size=120, progress=False, log=lambda *a: None)
    tok = first.tokenizer
    entries = list((cache_root() / "tokens").iterdir())
    assert len(entries) == 1 and len(list((cache_root() / "tokenizers").iterdir())) == 1
    for name in ("ids.npy", "sentence_starts.npy", "doc_starts.npy"):
        np.load(entries[0] / name, allow_pickle=False)  # plain arrays, no pickle
    corpus = load_corpus(str(path))
    cached = tokenize_corpus(corpus, tok, progress=False)
    assert isinstance(cached.ids, np.memmap)  # read from disk, not recomputed
    fresh = tokenize_corpus(corpus, tok, cache=False, progress=False)
    assert (np.asarray(cached.ids) == fresh.ids).all()
    assert (cached.sentence_starts == fresh.sentence_starts).all() and (cached.doc_starts == fresh.doc_starts).all()
    assert cached.num_documents == len(corpus.documents)
    assert cached.document(0)[0].tolist() == tok.convert_tokens_to_ids(tok.tokenize(corpus.documents[0][0]))

    # the text is not kept once tokenized (every rank of a run would hold it); its hash, the cache key, is
    assert first.corpus.documents is None and first.corpus.fingerprint() == corpus.fingerprint()

    # the second preparation reuses the trained tokenizer (same vocabulary) and the token ids
    second = prepare_data([str(path)], vocab_size=120, progress=False, log=lambda *a: None)
    assert second.tokenizer.ids_to_tokens == tok.ids_to_tokens
    assert len(list((cache_root() / "tokens").iterdir())) == 1

    # changed text: a new entry
    write_corpus(path, synthetic_documents(60, seed=1))
    prepare_data([str(path)], vocab_size=120, progress=False, log=lambda *a: None)
    assert len(list((cache_root() / "tokens").iterdir())) == 2


def test_document_views_hold_the_same_ids_as_documents(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIBERT_CACHE", str(tmp_path / "cache"))
    path = write_corpus(tmp_path / "c.txt", synthetic_documents(30))
    data = prepare_data([str(path)], vocab_size=120, progress=False, log=lambda *a: None)
    tokens = tokenize_corpus(load_corpus(str(path)), data.tokenizer, progress=False)
    views = data.train_documents
    assert len(views) + len(data.eval_documents) == tokens.num_documents  # no empty documents here
    expected = tokens.documents(views.indices)
    assert [[s.tolist() for s in d] for d in views] == [[s.tolist() for s in d] for d in expected]
    assert [s.tolist() for s in views[-1]] == [s.tolist() for s in expected[-1]]
    assert len(views[2:5]) == 3
    assert data.train_tokens == sum(len(s) for d in expected for s in d)
    assert data.eval_tokens == sum(len(s) for d in data.eval_documents for s in d)


def test_the_cache_key_keeps_the_tokenizers_save_warnings_to_itself():
    # The key is a hash of what save_pretrained writes; saving warns about a non-default max_input_chars_per_word,
    # which concerns a user who saves the tokenizer, not one who only prepares data. The key still tells it apart.
    import warnings
    from minibert.data.cache import tokenizer_fingerprint
    from minibert.tokenizer import WordPieceTokenizer
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        keys = {tokenizer_fingerprint(WordPieceTokenizer(vocab, max_input_chars_per_word=n)) for n in (100, 20)}
    assert len(keys) == 2
