"""train_wordpiece: the incremental heap algorithm against a plain recount, streaming from files, bad input,
and vocabularies that Hugging Face loads and uses exactly as minibert does."""

from __future__ import annotations

import gzip
import inspect
import json
import warnings
from collections import Counter
from pathlib import Path

import pytest

from minibert.tokenizer import WordPieceTokenizer, train_wordpiece
from minibert.tokenizer import vocab_io
from minibert.tokenizer.basic import BasicTokenizer
from minibert.tokenizer.trainer import SmallVocabularyWarning, count_words, learn_merges

SMALL = ["the cat sat on the mat", "the cats sat on the mats", "a hat, a bat and a rat!",
         "hugging hugs huge hugs", "the rat and the cat", "Unhappy unhug hugs"] * 3


def naive_merges(counts: Counter, n_symbols: int, min_frequency: int, score: str) -> list[str]:
    """The definition, without any cleverness: recount every pair after every merge."""
    words = [(w, f) for w, f in counts.items() if len(w) <= 100]
    symbols = sorted({s for w, _ in words for s in [w[0]] + ["##" + c for c in w[1:]]},
                     key=lambda s: (s.startswith("##"), s))
    order = {s: i for i, s in enumerate(symbols)}
    seqs = [[w[0]] + ["##" + c for c in w[1:]] for w, _ in words]
    freqs = [f for _, f in words]
    while len(symbols) < n_symbols:
        sym_count, pair_count = Counter(), Counter()
        for seq, f in zip(seqs, freqs):
            for s in seq:
                sym_count[s] += f
            for pair in zip(seq, seq[1:]):
                pair_count[pair] += f
        best = [(c / (sym_count[x] * sym_count[y]) if score == "wordpiece" else c, -order[x], -order[y], x, y)
                for (x, y), c in pair_count.items() if c >= min_frequency]
        if not best:
            break
        *_, x, y = max(best)
        merged = x + y[2:]
        if merged not in order:
            order[merged] = len(symbols)
            symbols.append(merged)
        for i, seq in enumerate(seqs):
            out, j = [], 0
            while j < len(seq):
                if j + 1 < len(seq) and seq[j] == x and seq[j + 1] == y:
                    out.append(merged)
                    j += 2
                else:
                    out.append(seq[j])
                    j += 1
            seqs[i] = out
    return symbols


@pytest.mark.parametrize("score", ["frequency", "wordpiece"])
@pytest.mark.parametrize("min_frequency", [1, 2, 3])
def test_heap_algorithm_equals_plain_recount(min_frequency, score):
    counts = count_words(SMALL, BasicTokenizer(), progress=False)
    for n_symbols in (30, 60, 200):
        assert (learn_merges(counts, n_symbols, min_frequency, score_name=score)
                == naive_merges(counts, n_symbols, min_frequency, score))


@pytest.mark.parametrize("score", ["frequency", "wordpiece"])
def test_heap_algorithm_equals_plain_recount_on_wikipedia(summaries, score):
    counts = count_words(summaries[:60], BasicTokenizer(), progress=False)
    alphabet = len(learn_merges(counts, 10**9, min_frequency=10**9))  # no merge possible: the alphabet alone
    assert learn_merges(counts, alphabet + 80, 2, score_name=score) == naive_merges(counts, alphabet + 80, 2, score)


def test_small_vocabulary():
    tok = train_wordpiece(SMALL, vocab_size=50, progress=False)
    assert tok.ids_to_tokens[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert tok.vocab_size == 50
    assert "##s" in tok.vocab and "t" in tok.vocab and "##t" in tok.vocab
    assert train_wordpiece(SMALL, vocab_size=50, progress=False).ids_to_tokens == tok.ids_to_tokens  # deterministic
    # Every word of the training text can be spelled: no [UNK].
    assert tok.unk_token_id not in tok.encode(" ".join(SMALL)).input_ids
    assert tok.decode(tok.encode("the cats sat on the mat!").input_ids) == "the cats sat on the mat!"


def test_min_frequency_and_limit_alphabet():
    with pytest.warns(SmallVocabularyWarning, match="fewer than vocab_size=1000: .* min_frequency=100 times$"):
        big = train_wordpiece(SMALL, vocab_size=1000, min_frequency=100, progress=False)
    assert big.vocab_size < 1000  # no pair is that frequent: the alphabet only
    with pytest.warns(SmallVocabularyWarning, match=r"limit_alphabet=5 left out the words with other characters"):
        limited = train_wordpiece(SMALL + ["ζ"], vocab_size=40, limit_alphabet=5, min_frequency=1, progress=False)
    singles = [t for t in limited.ids_to_tokens[5:] if len(t.removeprefix("##")) == 1]
    assert len({t.removeprefix("##") for t in singles}) <= 5
    assert limited.tokenize("ζ") == ["[UNK]"]


def test_streaming_from_files_equals_in_memory(tmp_path, monkeypatch, summaries):
    texts = summaries[:300]
    corpus = tmp_path / "corpus"
    (corpus / "sub").mkdir(parents=True)
    (corpus / "a.txt").write_text("\n".join(texts[:100]), encoding="utf-8")
    (corpus / "sub" / "b.txt").write_text("\n".join(texts[100:]) + "\n", encoding="utf-8")
    (corpus / ".hidden").write_bytes(b"\xff\xfe not read")
    expected = count_words(texts, BasicTokenizer(), progress=False)
    assert count_words([corpus], BasicTokenizer(), progress=False) == expected
    monkeypatch.setattr(vocab_io, "CHUNK_BYTES", 7)  # cut in the middle of everything
    assert count_words([corpus / "a.txt", corpus / "sub" / "b.txt"], BasicTokenizer(), progress=False) == expected
    a = train_wordpiece([corpus], vocab_size=500, progress=False)
    b = train_wordpiece(iter(texts), vocab_size=500, progress=True)  # a generator is read once, as a stream
    assert a.ids_to_tokens == b.ids_to_tokens


@pytest.mark.parametrize("chunk", [None, 5])
def test_non_utf8_file_names_file_and_offset(tmp_path, monkeypatch, chunk):
    if chunk:
        monkeypatch.setattr(vocab_io, "CHUNK_BYTES", chunk)
    path = tmp_path / "bad.txt"
    path.write_bytes(b"hello world\n" * 3 + b"bad \xc3\x28 x\n")
    with pytest.raises(ValueError, match=r"bad\.txt: not UTF-8 text: byte 0xc3 at byte offset 40"):
        train_wordpiece([path], vocab_size=100, progress=False)


def test_bad_input(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    for corpus in ([], [empty], ["  \n\t "]):
        with pytest.raises(ValueError, match="corpus is empty"):
            train_wordpiece(corpus, vocab_size=100, progress=False)
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        train_wordpiece([tmp_path / "nope.txt"], progress=False)
    with pytest.raises(ValueError, match="not one string"):
        train_wordpiece("the cat sat", progress=False)
    with pytest.raises(ValueError, match="vocab_size=10 leaves room for 5 tokens after the 5 special tokens, but "
                                         "the corpus's alphabet needs 24: 19 characters"):
        train_wordpiece(SMALL, vocab_size=10, progress=False)
    with pytest.raises(ValueError, match=r"must contain \[UNK\]"):
        train_wordpiece(SMALL, special_tokens=["[PAD]"], progress=False)
    with pytest.raises(ValueError, match="expected texts"):
        train_wordpiece([b"bytes"], progress=False)
    (tmp_path / "nothing").mkdir()
    with pytest.raises(ValueError, match="contains no files"):
        train_wordpiece([tmp_path / "nothing"], progress=False)


@pytest.mark.parametrize("cased", [False, True], ids=["uncased", "cased"])
def test_trained_vocabulary_loads_in_hugging_face(tmp_path, summaries, hard_cases, cased):
    transformers = pytest.importorskip("transformers")
    tok = train_wordpiece(summaries[:800], vocab_size=2000, do_lower_case=not cased, progress=False)
    tok.save_pretrained(tmp_path)
    config = json.loads((tmp_path / "tokenizer_config.json").read_text())
    assert config["do_lower_case"] is (not cased)
    hf = transformers.BertTokenizerFast.from_pretrained(str(tmp_path))
    mine = WordPieceTokenizer.from_pretrained(tmp_path)
    assert hf.get_vocab() == mine.vocab and len(hf) == 2000
    texts = summaries[800:1100] + hard_cases
    ref = hf(texts, truncation=True, max_length=128)
    for i, text in enumerate(texts):
        assert mine.encode(text, truncation=True, max_length=128).input_ids == ref["input_ids"][i], text
    pairs = hf(texts[:50], texts[50:100], truncation=True, max_length=40)
    for i in range(50):
        e = mine.encode(texts[i], texts[50 + i], truncation=True, max_length=40)
        assert e.input_ids == pairs["input_ids"][i] and e.token_type_ids == pairs["token_type_ids"][i]


def test_round_trip_with_a_trained_vocabulary(summaries):
    tok = train_wordpiece(summaries[:500], vocab_size=2000, progress=False)
    basic = BasicTokenizer()
    checked = 0
    for text in summaries[500:700]:
        ids = tok.encode(text).input_ids
        if tok.unk_token_id in ids:
            continue
        # Normalised text: words joined by single spaces, no space before . , ! ?
        words = basic.tokenize(text)
        expected = "".join(w if i == 0 or w in ".,!?" else " " + w for i, w in enumerate(words))
        assert tok.decode(ids) == expected
        checked += 1
    assert checked > 100


def test_frequency_score_keeps_common_words_whole_where_the_ratio_spells_them_out():
    # Common words plus 28 rare two-letter words (Cyrillic and Greek), each seen twice. Room for 6 merges:
    # the ratio score takes rare pairs (count 2 / (2 * 2) = 0.5, against ~1/400 for "t ##h"); the frequency
    # score makes "the" (2 merges) and "music" (4 merges).
    letters = [chr(0x430 + i) for i in range(28)] + [chr(0x3B1 + i) for i in range(24)] + ["ж", "ф", "ц", "ш"]
    rare = [letters[2 * i] + letters[2 * i + 1] for i in range(28)]
    texts = ["the music"] * 300 + ["of the city"] * 100 + [" ".join(rare)] * 2
    words = {w for t in texts for w in t.split()}
    initial = {w[0] for w in words} | {"##" + ch for w in words for ch in w[1:]}
    size = 5 + len(initial) + 6  # the special tokens, the alphabet, six merges
    by_ratio = train_wordpiece(texts, vocab_size=size, progress=False, score="wordpiece")
    by_frequency = train_wordpiece(texts, vocab_size=size, progress=False, score="frequency")
    assert by_frequency.tokenize("the music") == ["the", "music"]
    assert by_ratio.tokenize("the music") == ["t", "##h", "##e", "m", "##u", "##s", "##i", "##c"]
    with pytest.raises(ValueError, match="score must be one of"):
        train_wordpiece(texts, vocab_size=size, progress=False, score="bpe")


def test_frequency_is_the_default_score():
    # (the ratio score spells frequent words letter by letter at usual sizes; pretrain and HF use frequency)
    assert inspect.signature(train_wordpiece).parameters["score"].default == "frequency"
    texts = ["the music of the city"] * 30 + ["a cat and a dog"] * 10
    assert (train_wordpiece(texts, vocab_size=40, progress=False).ids_to_tokens
            == train_wordpiece(texts, vocab_size=40, progress=False, score="frequency").ids_to_tokens)


def test_file_names_given_as_texts_and_a_far_too_small_vocabulary_warn(tmp_path, monkeypatch):
    # The name is given relative to the folder, so the texts trained on (the name among them) have the same
    # letters whatever the temporary folder is called.
    monkeypatch.chdir(tmp_path)
    path = Path("small.txt")
    path.write_text("the cat sat on the mat\n" * 5, encoding="utf-8")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tok = train_wordpiece([str(path)], vocab_size=8192, progress=False)  # HF's trainer takes names: not here
    messages = [str(w.message) for w in caught]
    assert len(messages) == 2 and all("\n" not in m for m in messages)
    assert "pass pathlib.Path('small.txt')" in messages[0] and caught[0].filename == __file__
    assert "fewer than vocab_size=8192" in messages[1] and tok.vocab_size < 100
    # Neither for the file as a Path, nor for texts, nor for a str that is a file's name among real texts
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        train_wordpiece([path], vocab_size=30, progress=False)
        train_wordpiece(SMALL, vocab_size=40, progress=False)
        train_wordpiece([str(path), "the cat sat on the mat"] * 3, vocab_size=45, progress=False)


def test_vocab_size_errors_say_what_the_corpus_needs():
    with pytest.raises(ValueError, match=r"vocab_size=5 leaves no room after the 5 special tokens: .* at least 6 .* "
                                         r"and 7 for one written with a single letter"):
        train_wordpiece(["aaa"], vocab_size=5, progress=False)
    with pytest.raises(ValueError, match=r"^vocab_size=6 leaves room for 1 token after the 5 special tokens, but the "
                                         r"corpus's alphabet needs 2: 1 character, .*; raise vocab_size to at least 7,"
                                         r" or set limit_alphabet"):
        train_wordpiece(["aaa aa"], vocab_size=6, progress=False)
    assert train_wordpiece(["aaa aa"], vocab_size=7, progress=False).vocab_size == 7
    assert train_wordpiece(["a a"], vocab_size=6, progress=False).vocab_size == 6


# -- reading files: the formats pretrain reads, in bounded memory ------------------------------------------------

def test_jsonl_and_gz_files_are_read_as_pretrain_reads_them(tmp_path, summaries):
    texts = summaries[:40]
    expected = count_words(texts, BasicTokenizer(), progress=False)
    plain = tmp_path / "a.txt.gz"
    with gzip.open(plain, "wt", encoding="utf-8") as f:
        f.write("\n".join(texts))
    records = "".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(texts)) + "\n"
    (tmp_path / "b.jsonl").write_text(records, encoding="utf-8")
    with gzip.open(tmp_path / "c.jsonl.gz", "wt", encoding="utf-8") as f:
        f.write(records.replace('"text"', '"body"'))
    assert count_words([plain], BasicTokenizer(), progress=False) == expected
    assert count_words([tmp_path / "b.jsonl"], BasicTokenizer(), progress=False) == expected
    assert count_words([tmp_path / "c.jsonl.gz"], BasicTokenizer(), progress=False, text_field="body") == expected
    from minibert.data.corpus import read_documents  # pretrain's reader: the same words
    words = Counter(w for doc in read_documents(tmp_path / "c.jsonl.gz", "body") for sentence in doc
                    for w in BasicTokenizer().tokenize(sentence))
    assert words == expected


# gzip.compress writes the current time into its header unless mtime is given: parameters built from the clock
# differ between pytest-xdist workers that import this file a second apart, and the run is refused.
BAD_FILES = [
    ("bad.jsonl", b'{"text": "fine"}\n{"text": oops}\n', r"bad\.jsonl, line 2: not valid JSON"),
    ("field.jsonl", b'{"body": "x"}\n', r"field\.jsonl, line 1: expected a JSON object with a 'text' field"),
    ("kind.jsonl", b'\n{"text": 3}\n', r"kind\.jsonl, line 2: field 'text' must be a string, got int"),
    ("utf.jsonl", b'{"text": "a"}\n{"text": "\xe9"}\n', r"utf\.jsonl: not UTF-8 text: byte 0xe9 at byte offset 24"),
    ("broken.txt.gz", gzip.compress(b"hello world " * 50, mtime=0)[:30], r"broken\.txt\.gz: cannot be read as gzip"),
    ("plain.txt.gz", b"not compressed", r"plain\.txt\.gz: cannot be read as gzip"),
    ("latin.txt.gz", gzip.compress(b"ok caf\xe9", mtime=0),
     r"latin\.txt\.gz \(decompressed\): not UTF-8 text: byte 0xe9 at byte offset 6"),
]


@pytest.mark.parametrize("name, content, message", BAD_FILES, ids=[name for name, _, _ in BAD_FILES])
def test_bad_jsonl_and_gz_files_give_one_line_errors(tmp_path, name, content, message):
    (tmp_path / name).write_bytes(content)
    with pytest.raises(ValueError, match=message) as caught:
        count_words([tmp_path / name], BasicTokenizer(), progress=False)
    assert "\n" not in str(caught.value)


def test_a_file_without_spaces_is_read_in_bounded_pieces(tmp_path, monkeypatch):
    # No line break, no space: words end at punctuation (and other white space) only. Such a file is not held
    # whole: it is cut after its last punctuation or white space, which gives exactly the same words.
    text = "".join(f"word{i % 37},x{i}\u3000ñ{i % 5};" for i in range(400)) + "\t" + "y" * 700 + ",tail"
    path = tmp_path / "nospace.txt"
    path.write_text(text, encoding="utf-8")
    monkeypatch.setattr(vocab_io, "CHUNK_BYTES", 16)
    monkeypatch.setattr(vocab_io, "MAX_WORD_BYTES", 512, raising=False)
    pieces = list(vocab_io.read_chunks(path))
    assert max(len(t.encode()) for t, _ in pieces) <= 512 + 16
    assert sum(n for _, n in pieces) == len(text.encode())
    expected = count_words([text], BasicTokenizer(), progress=False)
    assert "y" * 700 in expected  # a word of 700 bytes (> MAX_WORD_BYTES) is left out: it is no WordPiece word
    del expected["y" * 700]
    assert count_words([path], BasicTokenizer(), progress=False) == expected
    assert (train_wordpiece([path], vocab_size=120, progress=False).ids_to_tokens
            == train_wordpiece([text], vocab_size=120, progress=False).ids_to_tokens)


def test_cutting_after_white_space_or_punctuation_never_changes_the_words():
    # What makes the cut above exact: for every such character c, and every setting of the basic tokenizer, the
    # words of "x" + c + "y" are those of "x" + c followed by those of "y", even when y starts with a combining mark.
    boundary = [chr(c) for c in range(0x110000) if vocab_io._BOUNDARY_RE.match(chr(c))]
    assert len(boundary) > 700 and " " in boundary and "\u3000" in boundary and "," in boundary
    for basic in (BasicTokenizer(), BasicTokenizer(do_lower_case=False),
                  BasicTokenizer(do_lower_case=False, strip_accents=True, tokenize_chinese_chars=False)):
        for c in boundary:
            for after in ("b\u0301", "\u0301b", "\u0000b"):
                left = "Ab\u0301" + c
                assert basic.tokenize(left + after) == basic.tokenize(left) + basic.tokenize(after), (basic, c, after)
