"""Loading and saving tokenizers as Hugging Face does: the tokenizer.json that save_pretrained writes (checked against
the `tokenizers` library's own file and against BertTokenizerFast / tokenizers.Tokenizer on varied text), a folder
that held another tokenizer, added tokens minibert cannot honour, float lengths, vocab.txt lines, and "minilm"."""

from __future__ import annotations

import json
import shutil

import pytest

from minibert.tokenizer import WordPieceTokenizer

VERY_LARGE_INTEGER = int(1e30)  # transformers' "no limit" for model_max_length
SMALL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "##s", "a", "##a", "b", "##b", ".", "!",
         "hello", "world", "un", "##aff", "##able"]
LONG_WORDS = ["pneumonoultramicroscopicsilicovolcanoconiosis" + "x" * k for k in range(0, 10)] + ["a" * 49, "a" * 50,
                                                                                                   "b" * 51, "y" * 101]
# (do_lower_case, strip_accents, tokenize_chinese_chars, max_input_chars_per_word)
SETTINGS = [(True, None, True, 100), (False, None, True, 100), (False, True, True, 100), (True, False, False, 100),
            (True, None, True, 50)]


def copy_tokenizer_files(source, target):
    target.mkdir()
    for name in ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(source / name, target / name)


def texts_to_check(hard_cases, summaries):
    return hard_cases + summaries[::400] + [" ".join(LONG_WORDS), "Ünïcödé " + "é" * 55 + " ok"]


@pytest.fixture(scope="module")
def minilm_vocab(minilm_dir):
    return WordPieceTokenizer.from_pretrained(minilm_dir).ids_to_tokens


def reference_json(tok: WordPieceTokenizer) -> dict:
    """What transformers' BertTokenizerFast saves as tokenizer.json for this vocabulary and these settings."""
    transformers = pytest.importorskip("transformers")
    hf = transformers.BertTokenizerFast(vocab=dict(tok.vocab), do_lower_case=tok.do_lower_case,
                                        strip_accents=tok.strip_accents,
                                        tokenize_chinese_chars=tok.tokenize_chinese_chars)
    hf.backend_tokenizer.model.max_input_chars_per_word = tok.max_input_chars_per_word  # (no argument for it)
    return json.loads(hf.backend_tokenizer.to_str())


@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: "-".join(map(str, s)))
def test_tokenizer_json_is_the_reference_file_and_tokenizes_identically(settings, tmp_path, minilm_vocab,
                                                                          hard_cases, summaries):
    tokenizers = pytest.importorskip("tokenizers")
    transformers = pytest.importorskip("transformers")
    lower, strip, chinese, max_chars = settings
    ours = WordPieceTokenizer(minilm_vocab, do_lower_case=lower, strip_accents=strip, tokenize_chinese_chars=chinese,
                              max_input_chars_per_word=max_chars)
    if max_chars == 100:
        ours.save_pretrained(tmp_path)
    else:
        with pytest.warns(UserWarning, match=r"max_input_chars_per_word=50 .* BertTokenizerFast .* always use 100"):
            ours.save_pretrained(tmp_path)
    saved = json.loads((tmp_path / "tokenizer.json").read_text(encoding="utf-8"))
    assert saved == reference_json(ours)
    references = [tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json")),
                  transformers.PreTrainedTokenizerFast.from_pretrained(str(tmp_path))]
    if max_chars == 100:  # transformers' BertTokenizer rebuilds its WordPiece model with the default 100 (docs)
        references.append(transformers.BertTokenizerFast.from_pretrained(str(tmp_path)))
    texts = texts_to_check(hard_cases, summaries)
    for ref in references:
        for text, pair in zip(texts, texts[1:] + [None]):
            mine = ours.encode(text, pair, return_offsets_mapping=True)
            if isinstance(ref, tokenizers.Tokenizer):
                theirs = ref.encode(text, pair)
                ids, types, offsets, words = theirs.ids, theirs.type_ids, theirs.offsets, theirs.word_ids
            else:
                theirs = ref(text, pair, return_offsets_mapping=True, return_token_type_ids=True)
                ids, types, offsets, words = (theirs["input_ids"], theirs["token_type_ids"],
                                              theirs["offset_mapping"], theirs.word_ids())
            assert (mine.input_ids, mine.token_type_ids) == (ids, types), (type(ref).__name__, text, pair)
            assert (mine.offsets, mine.word_ids) == ([tuple(o) for o in offsets], words), (text, pair)


def test_the_max_input_chars_per_word_setting_matters_in_these_texts(minilm_vocab, hard_cases, summaries):
    texts = texts_to_check(hard_cases, summaries)
    default, fifty = WordPieceTokenizer(minilm_vocab), WordPieceTokenizer(minilm_vocab, max_input_chars_per_word=50)
    assert sum(default.encode(t).input_ids != fifty.encode(t).input_ids for t in texts) >= 2


def test_saving_into_a_hugging_face_folder_replaces_its_tokenizer(tmp_path, minilm_dir):
    transformers = pytest.importorskip("transformers")
    folder = tmp_path / "copy"
    copy_tokenizer_files(minilm_dir, folder)
    (folder / "added_tokens.json").write_text('{"covid19": 30522}', encoding="utf-8")  # an old slow tokenizer's
    ours = WordPieceTokenizer(SMALL)
    ours.save_pretrained(folder)
    hf = transformers.BertTokenizerFast.from_pretrained(str(folder))
    assert len(hf) == len(SMALL) and hf.get_vocab() == ours.vocab
    for text in ["Hello, the cats sat! covid19", "unaffable [MASK] a b", ""]:
        assert hf(text)["input_ids"] == ours.encode(text).input_ids
    assert WordPieceTokenizer.from_pretrained(folder).ids_to_tokens == SMALL
    assert not (folder / "added_tokens.json").exists() and not (folder / "special_tokens_map.json").exists()


def test_a_token_that_vocab_txt_cannot_hold_is_refused_before_anything_is_written(tmp_path):
    with pytest.raises(ValueError, match=r"'cat ' ends in white space"):
        WordPieceTokenizer(SMALL + ["cat "]).save_pretrained(tmp_path / "out")
    assert not (tmp_path / "out").exists()


def hf_folder_with_added_tokens(tmp_path, add):
    transformers = pytest.importorskip("transformers")
    hf = transformers.BertTokenizerFast(vocab={t: i for i, t in enumerate(SMALL)})
    add(hf)
    hf.save_pretrained(str(tmp_path / "hf"))
    return tmp_path / "hf"


@pytest.mark.parametrize("add, shown", [
    (lambda hf: hf.add_tokens(["covid19", "mRNA"]), "'covid19', 'mRNA'"),
    (lambda hf: hf.add_special_tokens({"additional_special_tokens": ["[E1]", "[E2]"]}), "'[E1]', '[E2]'"),
    (lambda hf: hf.add_special_tokens({"additional_special_tokens": ["hello"]}), "'hello'"),  # in the vocabulary
])
def test_added_tokens_hugging_face_would_split_off_are_refused(tmp_path, add, shown):
    folder = hf_folder_with_added_tokens(tmp_path, add)
    with pytest.raises(ValueError) as info:
        WordPieceTokenizer.from_pretrained(folder)
    message = str(info.value)
    assert str(folder / "tokenizer.json") in message and shown in message and "\n" not in message
    assert "added tokens" in message and "[PAD], [UNK], [CLS], [SEP], [MASK]" in message


def test_added_tokens_in_the_older_files_are_refused_too(tmp_path):
    folder = tmp_path / "old"
    folder.mkdir()
    (folder / "vocab.txt").write_text("\n".join(SMALL) + "\n", encoding="utf-8")
    (folder / "added_tokens.json").write_text('{"covid19": 20}', encoding="utf-8")
    with pytest.raises(ValueError, match=r"added_tokens.json: .*'covid19'"):
        WordPieceTokenizer.from_pretrained(folder)
    (folder / "added_tokens.json").unlink()
    (folder / "special_tokens_map.json").write_text('{"additional_special_tokens": ["[E1]"]}', encoding="utf-8")
    with pytest.raises(ValueError, match=r"special_tokens_map.json: .*'\[E1\]'"):
        WordPieceTokenizer.from_pretrained(folder)
    (folder / "special_tokens_map.json").unlink()
    (folder / "tokenizer_config.json").write_text('{"extra_special_tokens": ["[E1]"]}', encoding="utf-8")
    with pytest.raises(ValueError, match=r"tokenizer_config.json: .*'\[E1\]'"):
        WordPieceTokenizer.from_pretrained(folder)


def test_special_token_names_in_special_tokens_map_json_win_as_in_transformers(tmp_path):
    transformers = pytest.importorskip("transformers")
    (tmp_path / "vocab.txt").write_text("\n".join(SMALL) + "\n", encoding="utf-8")
    (tmp_path / "tokenizer_config.json").write_text('{"cls_token": "[CLS]"}', encoding="utf-8")
    (tmp_path / "special_tokens_map.json").write_text('{"cls_token": "hello"}', encoding="utf-8")
    hf = transformers.BertTokenizerFast.from_pretrained(str(tmp_path))
    ours = WordPieceTokenizer.from_pretrained(tmp_path)
    assert ours.cls_token == hf.cls_token == "hello"
    for text in ["Hello the cats", "sayhello the cat [CLS]", ""]:
        assert ours.encode(text).input_ids == hf(text)["input_ids"]


def test_the_usual_special_tokens_listed_as_added_tokens_load(tmp_path):
    folder = hf_folder_with_added_tokens(tmp_path, lambda hf: None)
    assert WordPieceTokenizer.from_pretrained(folder).ids_to_tokens == SMALL


@pytest.mark.parametrize("written, loaded", [("1e30", VERY_LARGE_INTEGER), ("512.0", 512),
                                             ("Infinity", VERY_LARGE_INTEGER),
                                             ("1000000000000000019884624838656", VERY_LARGE_INTEGER)])
def test_a_float_model_max_length_is_taken_as_the_integer(tmp_path, written, loaded):
    (tmp_path / "vocab.txt").write_text("\n".join(SMALL) + "\n", encoding="utf-8")
    (tmp_path / "tokenizer_config.json").write_text(f'{{"model_max_length": {written}}}', encoding="utf-8")
    tok = WordPieceTokenizer.from_pretrained(tmp_path)
    assert tok.model_max_length == loaded and type(tok.model_max_length) is int
    assert tok.encode_batch(["the cats sat", "hello"]).input_ids.shape == (2, 6)
    assert len(tok.encode("the cat " * 300, truncation=True)) == (602 if loaded > 602 else 512)


@pytest.mark.parametrize("written", ["0", "-1", "12.5", "\"512\"", "true", "NaN"])
def test_a_model_max_length_that_is_no_length_is_refused_at_load(tmp_path, written):
    (tmp_path / "vocab.txt").write_text("\n".join(SMALL) + "\n", encoding="utf-8")
    (tmp_path / "tokenizer_config.json").write_text(f'{{"model_max_length": {written}}}', encoding="utf-8")
    with pytest.raises(ValueError) as info:
        WordPieceTokenizer.from_pretrained(tmp_path)
    message = str(info.value)
    assert str(tmp_path / "tokenizer_config.json") in message and "model_max_length" in message
    assert "\n" not in message


def test_vocab_txt_lines_are_read_as_hugging_face_reads_them(tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    transformers = pytest.importorskip("transformers")
    lines = ["[PAD]", "[UNK] ", "[CLS]\t", "[SEP]\r", "[MASK]\u3000", "hello \t ", "a\x0b", "b\x1c", "c\u200b",
             "  lead", "", "d\u00a0\u2028", "e\x85", "f\rg"]
    (tmp_path / "vocab.txt").write_bytes("\n".join(lines).encode("utf-8") + b"\r\n")
    theirs = transformers.BertTokenizerFast.from_pretrained(str(tmp_path)).get_vocab()
    from_file = tokenizers.models.WordPiece.read_file(str(tmp_path / "vocab.txt"))
    assert theirs == from_file
    ours = WordPieceTokenizer.from_pretrained(tmp_path)
    assert ours.vocab == theirs
    assert ours.ids_to_tokens[:7] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "a"]


def test_a_byte_order_mark_and_duplicates_are_refused_with_the_reason(tmp_path):
    (tmp_path / "vocab.txt").write_bytes(b"\xef\xbb\xbf" + "\n".join(SMALL).encode("utf-8"))
    with pytest.raises(ValueError, match=r"vocab.txt: starts with a UTF-8 byte-order mark.*'\\ufeff\[PAD\]'"):
        WordPieceTokenizer.from_pretrained(tmp_path)
    (tmp_path / "vocab.txt").write_text("\n".join(SMALL + ["cat  "]), encoding="utf-8")
    with pytest.raises(ValueError, match=r"duplicate token 'cat' on lines 7 and 21 \(white space at a line's end "
                                         r"does not count"):
        WordPieceTokenizer.from_pretrained(tmp_path)


def test_vocab_txt_and_tokenizer_json_that_disagree_are_refused(tmp_path):
    WordPieceTokenizer(SMALL).save_pretrained(tmp_path)
    (tmp_path / "vocab.txt").write_text("\n".join(SMALL[:-1] + ["other"]) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"vocab.txt and tokenizer.json hold different vocabularies.*id 19"):
        WordPieceTokenizer.from_pretrained(tmp_path)


def test_minilm_by_name(minilm_dir, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    tok = WordPieceTokenizer.from_pretrained("minilm")
    assert tok.vocab_size == 30522 and tok.encode("Hello!").input_ids == [101, 7592, 999, 102]


def test_a_keyword_that_gives_a_role_another_token_still_loads_a_folder_with_tokenizer_json():
    # The files list [UNK] and [MASK] as added special tokens; a keyword giving the role to another vocabulary
    # entry must not turn the files' own tokens into "added tokens" to refuse.
    from minibert.data.builtin import minilm_dir
    reference = WordPieceTokenizer.from_pretrained(minilm_dir())
    unk = WordPieceTokenizer.from_pretrained(minilm_dir(), unk_token="[unused1]")
    assert unk.unk_token_id == reference.vocab["[unused1]"] != reference.unk_token_id
    mask = WordPieceTokenizer.from_pretrained(minilm_dir(), mask_token="[unused0]")
    assert mask.mask_token_id == reference.vocab["[unused0]"]
