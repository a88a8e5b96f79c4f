import gzip
import json

import pytest

from minibert.data.corpus import load_corpus, split_documents

TEXT = "The cat sat. It was happy.\nThe dog ran.\n\nSecond document here.\nIt has two lines.\n\n\nThird one. " \
       "Short.\n" + "Filler words make the corpus long enough to train on. " * 30 + "\n"


def test_text_format_blank_lines_separate_documents_and_lines_are_split(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text(TEXT)
    corpus = load_corpus(str(path))
    assert corpus.name == "c"
    assert len(corpus.documents) == 3
    assert corpus.documents[0] == ["The cat sat.", "It was happy.", "The dog ran."]
    assert corpus.documents[1] == ["Second document here.", "It has two lines."]


def test_jsonl_gz_and_folders(tmp_path):
    records = [{"text": "Alpha one. Alpha two.", "id": 1}, {"text": "Beta " * 120}]
    folder = tmp_path / "data"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    with gzip.open(folder / "sub" / "b.txt.gz", "wt") as f:
        f.write(TEXT)
    (folder / "notes.md").write_text("ignored")
    corpus = load_corpus(str(folder))
    assert [p.name for p in corpus.files] == ["a.jsonl", "b.txt.gz"]
    assert corpus.documents[0] == ["Alpha one.", "Alpha two."]
    assert len(corpus.documents) == 2 + 3


def test_jsonl_errors_name_the_line_and_field(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"text": "fine"}\n{"body": "no text field"}\n')
    with pytest.raises(ValueError, match=r"bad.jsonl, line 2: .*'text' field"):
        load_corpus(str(path))
    path.write_text('{"text": "fine"}\nnot json\n')
    with pytest.raises(ValueError, match="line 2: not valid JSON"):
        load_corpus(str(path))


def test_missing_empty_and_too_small_corpora_are_refused(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_corpus(str(tmp_path / "nope.txt"))
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n  \n")
    with pytest.raises(ValueError, match="has no text"):
        load_corpus(str(empty))
    small = tmp_path / "small.txt"
    small.write_text("One short document only.\n")
    with pytest.raises(ValueError, match="too small: 1 document"):
        load_corpus(str(small))
    with pytest.raises(ValueError, match="too small: 1 document"):
        load_corpus(["wiki", str(small)])  # a small part of a mix too


def test_held_out_split_is_fixed_disjoint_and_nonempty(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text("\n\n".join(f"Document number {i} has words. More words here." for i in range(300)) + "\n")
    corpus = load_corpus(str(path))
    train, held = split_documents(corpus, eval_fraction=0.1)
    assert len(held) == 30 and not set(train) & set(held) and sorted(train + held) == list(range(300))
    assert split_documents(corpus, eval_fraction=0.1) == (train, held)  # same every time (fixed seed)
    assert held != list(range(270, 300))  # shuffled, not the tail


def test_builtin_wiki_and_ptb():
    pytest.importorskip("importlib.metadata")
    try:
        wiki = load_corpus("wiki")
    except FileNotFoundError as e:
        pytest.skip(str(e))
    assert len(wiki.documents) == 10033 and 700_000 < wiki.num_words < 850_000
    try:
        ptb = load_corpus("ptb")
    except FileNotFoundError as e:
        pytest.skip(str(e))
    train, held = split_documents(ptb)
    assert held == sorted(ptb.eval_documents)  # the valid split is the held-out set
    assert sum(len(ptb.documents[d]) for d in held) == 3370
    assert "[UNK]" in ptb.documents[0][1] and "<unk>" not in ptb.documents[0][1]


def test_a_mix_of_corpora_keeps_each_parts_held_out_documents(tmp_path, monkeypatch):
    import minibert.data.corpus as corpus_module
    from minibert.data.corpus import Corpus

    a = [[f"Alpha document {i} says something."] for i in range(200)]
    b = [[f"Beta document {i} says something else."] for i in range(50)]
    fixed = Corpus("fixed", b, [], eval_documents={3, 7}, settings={"builtin": "fixed"})
    monkeypatch.setattr(corpus_module, "_load_ptb", lambda: fixed)
    path = tmp_path / "mine.txt"
    path.write_text("\n\n".join(" ".join(d) for d in a) + "\n")

    alone = load_corpus(str(path))
    mixed = load_corpus(["ptb", str(path)])
    assert mixed.name == "fixed+mine"
    assert mixed.documents == b + a  # built-in parts first, then the files
    train, held = split_documents(mixed, eval_fraction=0.05)
    _, held_alone = split_documents(alone, eval_fraction=0.05)
    # the predefined part keeps its split, the drawn part holds out what it holds out alone
    assert held == [3, 7] + [50 + d for d in held_alone]
    assert len(held_alone) == 10 and sorted(train + held) == list(range(250))
    assert mixed.fingerprint() != alone.fingerprint()
    with pytest.raises(ValueError, match="'ptb' is given twice"):
        load_corpus(["ptb", "ptb"])
