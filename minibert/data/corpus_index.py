"""What a corpus is, apart from its text: kept after a first read so that later runs need not read the text.

A run trains on token ids (memory-mapped from the token cache, data/cache.py). Yet to find them it needs the
corpus's key (its fingerprint), its document count and held-out documents, and, to find its cached tokenizer,
which documents it trains on: all of which reading the corpus gives, at the cost of holding its whole text for a
while, in every process of a run (IMDB's reviews: ~160 MB more at the peak than the token ids need).

So after a corpus is read, its description goes to `<cache>/corpora/<key>.json`: name, files, reading settings,
fingerprint, counts, held-out documents. The key hashes the sources as given, the text field, each file's path,
size and modification time, and the source code of the readers; on a later run with the same key the files are
hashed again (streamed, no text held) and the description is used only if that fingerprint is the same. A run
whose tokenizer or token ids are not cached reads the text as before.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from minibert.data.cache import cache_root
from minibert.io.atomic import atomic_write_text

INDEX_VERSION = 1
_READERS = ("corpus.py", "imdb.py", "wikitext.py", "sentences.py", "builtin.py")  # (in minibert/data/)


def sources_key(sources, text_field: str) -> str:
    """A key for the corpus `sources` names, from the files' paths, sizes and times (no file is read)."""
    from minibert.data.corpus import builtin_files, corpus_files
    builtins, files = corpus_files(sources)
    paths = [p for name in builtins for p in builtin_files(name)] + list(files)
    h = hashlib.sha256()
    h.update(json.dumps({"sources": [str(s) for s in ([sources] if isinstance(sources, (str, Path)) else sources)],
                         "text_field": text_field, "version": INDEX_VERSION}).encode())
    for path in paths:
        stat = Path(path).stat()
        h.update(f"{Path(path).resolve()}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
    here = Path(__file__).parent
    for name in _READERS:
        h.update((here / name).read_bytes())
    return h.hexdigest()[:16]


def index_path(key: str) -> Path:
    return cache_root() / "corpora" / f"{key}.json"


def save_index(key: str, corpus) -> None:
    """Describe `corpus` (read, its documents still there) under `key`."""
    from minibert.data.corpus import drawn_parts
    record = {"version": INDEX_VERSION, "name": corpus.name, "files": [str(f) for f in corpus.files],
              "settings": corpus.settings, "fingerprint": corpus.fingerprint(),
              "num_documents": corpus.num_documents, "num_words": corpus.num_words,
              "eval_documents": sorted(corpus.eval_documents), "drawn_parts": [list(p) for p in drawn_parts(corpus)]}
    path = index_path(key)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(record) + "\n")


def load_index(key: str):
    """The Corpus described under `key`, without its text (documents None), or None when there is no usable
    description (none, another version, unreadable, or files whose bytes changed)."""
    from minibert.data.corpus import Corpus
    path = index_path(key)
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        if record.get("version") != INDEX_VERSION:
            return None
        corpus = Corpus(record["name"], None, [Path(f) for f in record["files"]],
                        eval_documents=set(record["eval_documents"]),
                        drawn_parts=[tuple(p) for p in record["drawn_parts"]], settings=record["settings"],
                        document_count=int(record["num_documents"]), word_count=int(record["num_words"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    try:
        fingerprint = corpus.fingerprint()  # the files' bytes, hashed again
    except OSError:
        return None
    return corpus if fingerprint == record["fingerprint"] else None
