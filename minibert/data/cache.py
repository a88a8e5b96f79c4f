"""Token ids of a corpus, computed once and kept on disk so the next run starts at once.

Layout of one cache entry, `<cache>/tokens/<corpus hash>-<tokenizer hash>/` (plain .npy files, no pickle):

    ids.npy              (N,)   every token id, sentences back to back, no special tokens (uint16 or int32)
    sentence_starts.npy  (S+1,) where sentence s is: ids[sentence_starts[s]:sentence_starts[s+1]]
    doc_starts.npy       (D+1,) where document d is: sentences doc_starts[d] .. doc_starts[d+1]-1
    meta.json            counts and what the entry was made from

The key hashes the corpus files' bytes and the tokenizer's saved files, so changing either makes a new entry.
The cache folder is $MINIBERT_CACHE, or ~/.cache/minibert.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import shutil
import tempfile
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from minibert._progress import tqdm

FORMAT_VERSION = 1  # bump when the way text becomes ids changes
# The tokenizer's chunk -> ids cache is emptied every this many documents while a corpus is tokenized. Left to
# grow over all of wiki it takes ~30 MB of small objects, and a few hundred long-lived ones made meanwhile pin
# ~20 MB of that for the whole run; emptied every 1,000 documents, tokenizing takes ~5% longer (one time).
CLEAR_CACHE_EVERY = 1000


def cache_root() -> Path:
    return Path(os.environ.get("MINIBERT_CACHE") or Path.home() / ".cache" / "minibert").expanduser()


@contextlib.contextmanager
def atomic_folder(target: Path) -> Iterator[Path]:
    """Yield a temporary folder next to `target`; on success rename it to `target` (unless another process
    finished the same entry first, in which case ours is dropped), on error delete it."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.parent / f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    tmp.mkdir()
    try:
        yield tmp
        try:
            os.rename(tmp, target)
        except OSError:
            if not target.exists():
                raise
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def tokenizer_fingerprint(tokenizer) -> str:
    """A hash of the files the tokenizer saves (vocab.txt, tokenizer.json, tokenizer_config.json): same files, same
    ids. (tokenizer.json, made from the other two, adds nothing to the key; it is hashed anyway, as whatever
    save_pretrained writes is, so that the key follows the saved files with no list of them to keep up to date.)"""
    h = hashlib.sha256()
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a warning about what saving writes is for a user who saves, not for a key
        tokenizer.save_pretrained(tmp)
        for path in sorted(Path(tmp).iterdir()):
            h.update(path.name.encode())
            h.update(path.read_bytes())
    return h.hexdigest()[:16]


@dataclass
class TokenizedCorpus:
    ids: np.ndarray              # (N,)
    sentence_starts: np.ndarray  # (S+1,)
    doc_starts: np.ndarray       # (D+1,)

    @property
    def num_documents(self) -> int:
        return len(self.doc_starts) - 1

    @property
    def num_tokens(self) -> int:
        return len(self.ids)

    def document(self, d: int) -> list[np.ndarray]:
        """The sentences of document d, each an int64 array of token ids."""
        s0, s1 = int(self.doc_starts[d]), int(self.doc_starts[d + 1])
        starts = self.sentence_starts
        return [np.asarray(self.ids[starts[s]:starts[s + 1]], dtype=np.int64) for s in range(s0, s1)]

    def documents(self, indices) -> list[list[np.ndarray]]:
        return [self.document(d) for d in indices]

    def document_views(self, indices) -> DocumentViews:
        """The documents `indices`, made on access from views into `ids` (see DocumentViews)."""
        return DocumentViews(self, indices)


class DocumentViews(Sequence):
    """A list of documents (each a list of sentences) that holds only the token ids and their index arrays.

    `views[i]` makes document indices[i]'s sentence list on access, each sentence a view into the ids, in their
    stored dtype (uint16 for vocabularies up to 65,536 tokens): same values as TokenizedCorpus.document, but
    nothing is copied. As int64 arrays, one per sentence, wiki's 1.1M training tokens took ~14 MB for the whole
    run; this takes the 2 MB of ids, which are memory-mapped from the cache anyway.
    """

    def __init__(self, tokens: TokenizedCorpus, indices):
        self.ids = np.asarray(tokens.ids)  # a plain ndarray over the memory map: its slices are light views
        self.sentence_starts, self.doc_starts = tokens.sentence_starts, tokens.doc_starts
        self.indices = np.asarray(indices, dtype=np.int64).reshape(-1)

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        d = int(self.indices[i])
        ids, starts = self.ids, self.sentence_starts
        return [ids[starts[s]:starts[s + 1]] for s in range(int(self.doc_starts[d]), int(self.doc_starts[d + 1]))]


def tokens_folder(corpus, tokenizer) -> Path:
    return cache_root() / "tokens" / f"{corpus.fingerprint()}-{tokenizer_fingerprint(tokenizer)}-v{FORMAT_VERSION}"


def cached_tokens(corpus, tokenizer) -> TokenizedCorpus | None:
    """The cached token ids of `corpus` (which need not hold its text) with `tokenizer`, or None."""
    folder = tokens_folder(corpus, tokenizer)
    return load_tokenized(folder) if (folder / "meta.json").exists() else None


def tokenize_corpus(corpus, tokenizer, cache: bool = True, progress: bool = True) -> TokenizedCorpus:
    """Token ids of every sentence of `corpus`, from the cache when it has them."""
    folder = tokens_folder(corpus, tokenizer)
    if cache and (folder / "meta.json").exists():
        return load_tokenized(folder)
    tokenized = _tokenize(corpus, tokenizer, progress)
    if cache:
        with atomic_folder(folder) as tmp:
            save_tokenized(tokenized, tmp, meta={"corpus": corpus.name, "files": [str(f) for f in corpus.files]})
        return load_tokenized(folder)
    return tokenized


def _tokenize(corpus, tokenizer, progress: bool) -> TokenizedCorpus:
    ids, sentence_starts, doc_starts = [], [0], [0]
    total = 0
    clear_cache = getattr(tokenizer, "clear_cache", None)
    bar = tqdm(corpus.documents, desc=f"tokenizing {corpus.name}", unit="doc", disable=not progress, leave=False)
    for d, doc in enumerate(bar):
        if clear_cache is not None and d % CLEAR_CACHE_EVERY == CLEAR_CACHE_EVERY - 1:
            clear_cache()
        for sentence in doc:
            pieces = tokenizer.convert_tokens_to_ids(tokenizer.tokenize(sentence))
            if pieces:  # a sentence of only spaces/control characters has no tokens: skip it
                ids.append(np.asarray(pieces, dtype=np.int64))
                total += len(pieces)
                sentence_starts.append(total)
        doc_starts.append(len(sentence_starts) - 1)
    if clear_cache is not None:
        clear_cache()  # the corpus's distinct words: no use after this, and would stay for the whole run
    vocab_size = len(tokenizer.vocab)
    dtype = np.uint16 if vocab_size <= np.iinfo(np.uint16).max + 1 else np.int32
    flat = np.concatenate(ids).astype(dtype) if ids else np.zeros(0, dtype=dtype)
    return TokenizedCorpus(flat, np.asarray(sentence_starts, dtype=np.int64), np.asarray(doc_starts, dtype=np.int64))


def save_tokenized(t: TokenizedCorpus, folder: Path, meta: dict | None = None) -> None:
    folder = Path(folder)
    np.save(folder / "ids.npy", np.ascontiguousarray(t.ids))
    np.save(folder / "sentence_starts.npy", t.sentence_starts)
    np.save(folder / "doc_starts.npy", t.doc_starts)
    info = dict(meta or {}, format_version=FORMAT_VERSION, num_tokens=t.num_tokens,
                num_sentences=len(t.sentence_starts) - 1, num_documents=t.num_documents)
    (folder / "meta.json").write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")


def load_tokenized(folder: Path) -> TokenizedCorpus:
    """Memory-map the cached arrays (no pickle: plain numeric .npy files)."""
    folder = Path(folder)
    load = lambda name: np.load(folder / name, mmap_mode="r", allow_pickle=False)  # noqa: E731
    return TokenizedCorpus(load("ids.npy"), np.asarray(load("sentence_starts.npy")),
                           np.asarray(load("doc_starts.npy")))
