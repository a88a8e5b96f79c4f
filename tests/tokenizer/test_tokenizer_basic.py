"""BasicTokenizer: cleaning, CJK, accents, lowercasing and punctuation, each step on its own."""

from __future__ import annotations

import pytest

from minibert.tokenizer.basic import BasicTokenizer, is_cjk, is_punctuation, lowercase


@pytest.fixture
def basic():
    return BasicTokenizer()


def test_cleaning_drops_controls_and_normalises_whitespace(basic):
    assert basic.normalize("a\x00b\x01c\x7fd\ufffde") == "abcde"
    assert basic.normalize("a\tb\nc\rd\u00a0e\u3000f\u2028g") == "a b c d e f g"
    # \x0b, \x0c and \x85 are white space to str.isspace() but control characters to BERT: dropped.
    assert basic.normalize("a\x0bb\x0cc\x85d") == "abcd"
    # Zero-width and format characters are dropped, joining the word around them.
    assert basic.tokenize("zero\u200bwidth\u200djoin\ufeff") == ["zerowidthjoin"]


def test_empty_and_whitespace_only(basic):
    assert basic.tokenize("") == []
    assert basic.tokenize(" \t\n\r\u3000 ") == []


def test_cjk_characters_are_words(basic):
    assert basic.tokenize("ab中文cd") == ["ab", "中", "文", "cd"]
    assert is_cjk("中") and is_cjk("\U00020000") and not is_cjk("カ") and not is_cjk("한")
    assert BasicTokenizer(tokenize_chinese_chars=False).tokenize("ab中文cd") == ["ab中文cd"]


def test_accents_are_stripped_when_lowercasing(basic):
    assert basic.tokenize("Héllo Wörld naïve e\u0301") == ["hello", "world", "naive", "e"]
    cased = BasicTokenizer(do_lower_case=False)
    assert cased.tokenize("Héllo") == ["Héllo"]
    assert BasicTokenizer(do_lower_case=False, strip_accents=True).tokenize("Héllo") == ["Hello"]
    assert BasicTokenizer(do_lower_case=True, strip_accents=False).tokenize("Héllo") == ["héllo"]


def test_lowercase_is_per_character():
    # No final-sigma rule (str.lower() would give "οδος").
    assert lowercase("ΟΔΟΣ") == "οδοσ"
    assert lowercase("İ") == "i\u0307"  # one character can become two
    assert lowercase("ABC") == "abc"


def test_accents_are_stripped_before_lowercasing(basic):
    # İ -> NFD "I" + U+0307 -> mark dropped -> "I" -> "i". (Lowercasing first would keep a dot.)
    assert basic.tokenize("İstanbul") == ["istanbul"]


def test_punctuation_is_split_off(basic):
    assert basic.tokenize("Hello, world! (x+y)=z") == ["hello", ",", "world", "!", "(", "x", "+", "y", ")", "=", "z"]
    assert basic.tokenize("don't") == ["don", "'", "t"]
    for ch in "$+<=>^`|~!\"#%&'()*,-./:;?@[\\]_{}«»¿¡—…":
        assert is_punctuation(ch), ch
    for ch in "a1 é中€©":
        assert not is_punctuation(ch), ch


def test_full_width_forms(basic):
    # Full-width letters stay letters (NFD does not fold them), full-width punctuation is punctuation.
    assert basic.tokenize("Ａｂｃ，１２３！") == ["ａｂｃ", "，", "１２３", "！"]


def test_long_text_of_many_kinds(basic):
    text = "Café 中文 👍🏽 https://x.org/a?b=c"
    assert basic.tokenize(text) == ["cafe", "中", "文", "👍🏽", "https", ":", "/", "/", "x", ".", "org", "/", "a",
                                    "?", "b", "=", "c"]
