"""The built-in corpora read from downloaded wheels: `wikitext2` (train articles, valid held out, test never
read) and `imdb` (the train part of the IMDB split only: no eval or test review reaches pre-training)."""

import numpy as np
import pytest
from wheel_fixtures import wikitext_lines, write_imdb_wheel, write_wikitext_wheel

from minibert.data import imdb
from minibert.data.corpus import load_corpus, split_documents
from minibert.data.wikitext import parse_articles


@pytest.fixture
def wheels(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIBERT_DATA", str(tmp_path / "wheels"))
    monkeypatch.setenv("MINIBERT_CACHE", str(tmp_path / "cache"))
    write_imdb_wheel(tmp_path / "wheels")
    write_wikitext_wheel(tmp_path / "wheels")
    return tmp_path / "wheels"


def test_wikitext_articles_split_at_titles_without_headings():
    articles = parse_articles(wikitext_lines("train", 2).splitlines(keepends=True))
    assert len(articles) == 2
    first = articles[0]
    assert first[0] == "The trainword article 0 is well-known , and 1,000 trainwords long ."
    assert first[1] == "It has a second trainsentence ."
    assert not any("=" in s for a in articles for s in a)
    assert len(first) == 2 + 12


def test_wikitext2_trains_on_train_holds_out_valid_and_never_reads_test(wheels):
    corpus = load_corpus("wikitext2")
    assert corpus.name == "wikitext2" and len(corpus.documents) == 6 + 2
    train, held = split_documents(corpus)
    assert held == [6, 7]
    assert all("validword" in corpus.documents[d][0] for d in held)
    assert all("trainword" in corpus.documents[d][0] for d in train)
    assert not any("test" in s for doc in corpus.documents for s in doc)


def test_imdb_corpus_is_the_train_part_only(wheels):
    split = imdb.load_imdb()
    corpus = load_corpus("imdb")
    assert corpus.name == "imdb" and len(corpus.documents) == len(split["train"])
    text = {" ".join(doc) for doc in corpus.documents}
    assert text == set(split["train"].texts)
    train, held = split_documents(corpus, eval_fraction=0.1)  # held out from the train part too
    assert len(held) == 3 and sorted(train + held) == list(range(len(corpus.documents)))


def test_no_eval_or_test_review_reaches_the_tokenizer_or_the_token_ids(wheels, monkeypatch):
    import minibert.tokenizer as tokenizer_package
    from minibert.data.prepare import prepare_data
    seen = []
    real = tokenizer_package.train_wordpiece
    monkeypatch.setattr(tokenizer_package, "train_wordpiece", lambda texts, **kw: seen.extend(texts) or real(
        texts, **kw))
    data = prepare_data("imdb", vocab_size=200, progress=False, log=lambda *a: None)
    split = imdb.load_imdb()
    numbered = lambda reviews: {w for t in reviews.texts for w in t.split() if w.startswith("Review")}  # noqa: E731
    trained_on = {w for s in seen for w in s.split() if w.startswith("Review")}
    assert trained_on and trained_on <= numbered(split["train"])  # (less the held-out documents)
    assert not trained_on & (numbered(split["eval"]) | numbered(split["test"]))
    # the token ids: exactly the training reviews' (held-out documents included), nothing else
    tok = data.tokenizer
    ids = np.concatenate([np.concatenate(doc) for docs in (data.train_documents, data.eval_documents)
                          for doc in docs])
    expected = [i for t in split["train"].texts for i in tok.convert_tokens_to_ids(tok.tokenize(t))]
    assert sorted(ids.tolist()) == sorted(expected)


def test_mixing_a_wheel_corpus_with_a_file_keeps_each_held_out_rule(wheels, tmp_path):
    path = tmp_path / "mine.txt"
    path.write_text("\n\n".join(f"My own document {i}. It is here." for i in range(50)) + "\n")
    corpus = load_corpus(["wikitext2", "imdb", str(path)])
    assert corpus.name == "wikitext2+imdb+mine"
    _, held = split_documents(corpus, eval_fraction=0.1)
    assert [6, 7] == held[:2]  # wikitext2's valid articles, then draws from imdb and from the file
    assert len(held) == 2 + 3 + 5
