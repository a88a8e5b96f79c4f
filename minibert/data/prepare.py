"""From a corpus name to token ids ready for pre-training: read, split, get a tokenizer, tokenize (all cached).

    corpus files --read--> documents of sentences --split--> train / held-out documents
                 --tokenizer (given, or trained on the training documents and cached)-->
                 --token ids (cached as .npy in $MINIBERT_CACHE)--> PreparedData
"""

from __future__ import annotations

import hashlib
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from minibert._malloc import release_freed_memory
from minibert.data.cache import (DocumentViews, TokenizedCorpus, atomic_folder, cache_root, cached_tokens,
                                 tokenize_corpus)
from minibert.data.corpus import Corpus, load_corpus, split_documents
from minibert.data.corpus_index import load_index, save_index, sources_key

MIN_TRAIN_TOKENS = 64
# Frequency merges: with only 8192 tokens, the WordPiece ratio score spends the vocabulary on rare names and
# leaves common words spelled letter by letter (4.2 tokens per word on wiki, against 1.5 with frequency
# merges); see minibert/tokenizer/trainer.py.
TOKENIZER_SCORE = "frequency"


@dataclass
class PreparedData:
    corpus: Corpus
    tokenizer: object                     # a minibert WordPieceTokenizer
    train_documents: DocumentViews         # documents of sentences (token id arrays), made on access
    eval_documents: DocumentViews
    train_tokens: int
    eval_tokens: int
    seconds: float                        # how long preparation took


def trained_tokenizer_folder(corpus: Corpus, train_doc_ids: list[int], vocab_size: int) -> Path:
    """Where the tokenizer trained on this corpus is cached. The key covers the corpus bytes, the training
    documents, the vocabulary size and the trainer's source code (a fixed trainer gives a new vocabulary)."""
    import minibert.tokenizer.trainer as trainer
    h = hashlib.sha256()
    h.update(corpus.fingerprint().encode())
    h.update(np.asarray(train_doc_ids, dtype=np.int64).tobytes())
    h.update(Path(trainer.__file__).read_bytes())
    h.update(TOKENIZER_SCORE.encode())
    return cache_root() / "tokenizers" / f"{corpus.name}-{vocab_size}-{h.hexdigest()[:16]}"


def get_tokenizer(corpus: Corpus, train_doc_ids: list[int], tokenizer_dir: str | None, vocab_size: int,
                  progress: bool = True, log=print):
    from minibert.tokenizer import WordPieceTokenizer, train_wordpiece
    from minibert.tokenizer.trainer import SmallVocabularyWarning, is_small_vocabulary
    if tokenizer_dir is not None:
        return WordPieceTokenizer.from_pretrained(tokenizer_dir)
    folder = trained_tokenizer_folder(corpus, train_doc_ids, vocab_size)
    if (folder / "vocab.txt").exists():
        log(f"tokenizer: cached {folder}")
        return WordPieceTokenizer.from_pretrained(folder)
    log(f"tokenizer: training a {vocab_size}-token WordPiece vocabulary on the training documents "
        f"(cached for next time)")
    texts = [sentence for d in train_doc_ids for sentence in corpus.documents[d]]
    with warnings.catch_warnings():  # (said below in the command's terms, not train_wordpiece's arguments)
        warnings.simplefilter("ignore", SmallVocabularyWarning)
        tokenizer = train_wordpiece(texts, vocab_size=vocab_size, progress=progress, score=TOKENIZER_SCORE)
    if is_small_vocabulary(len(tokenizer.vocab), vocab_size):
        log(f"tokenizer: note: only {len(tokenizer.vocab):,} tokens of --vocab-size {vocab_size:,}: the training "
            f"documents have too few distinct word pieces to merge (a preset model's embedding matrix is sized to it)")
    with atomic_folder(folder) as tmp:
        tokenizer.save_pretrained(tmp)
    # Training peaks at ~170 MB of small Python objects. The vocabulary's strings, made during the merges, are
    # scattered over that memory and would pin most of it in the process for the whole run (~110 MB). Reloaded
    # from the files just written (exactly what later runs do), the trained tokenizer and its strings go, and
    # the memory with them.
    del tokenizer, texts
    release_freed_memory()
    return WordPieceTokenizer.from_pretrained(folder)


def check_tokenizer(tokenizer, where: str) -> None:
    missing = [name for name in ("pad", "cls", "sep", "mask")
               if getattr(tokenizer, f"{name}_token_id", None) is None]
    if missing:
        raise ValueError(f"tokenizer {where} has no {', '.join('[' + m.upper() + ']' for m in missing)} token; "
                         f"pre-training needs [PAD], [CLS], [SEP] and [MASK] in vocab.txt")


def prepare_data(sources, text_field="text", tokenizer_dir=None, vocab_size=8192, eval_fraction=0.02,
                 cache=True, progress=True, log=print) -> PreparedData:
    start = time.perf_counter()
    key = sources_key(sources, text_field) if cache else None
    found = _from_cache(key, tokenizer_dir, vocab_size, eval_fraction, log) if cache else None
    if found is not None:  # the tokenizer and the token ids are cached: the text is not read at all
        corpus, train_ids, eval_ids, tokenizer, tokens = found
    else:
        corpus = load_corpus(sources, text_field)
        train_ids, eval_ids = split_documents(corpus, eval_fraction)
        _say_corpus(corpus, eval_ids, log)
        tokenizer = get_tokenizer(corpus, train_ids, tokenizer_dir, vocab_size, progress, log)
        check_tokenizer(tokenizer, tokenizer_dir or "(trained)")
        tokens = tokenize_corpus(corpus, tokenizer, cache=cache, progress=progress)
        if cache:
            save_index(key, corpus)
    sentences = np.diff(tokens.doc_starts)  # per document; documents with no tokens are left out
    train_docs = tokens.document_views([d for d in train_ids if sentences[d]])
    eval_docs = tokens.document_views([d for d in eval_ids if sentences[d]])
    n_train, n_eval = _num_tokens(tokens, train_docs.indices), _num_tokens(tokens, eval_docs.indices)
    if n_train < MIN_TRAIN_TOKENS or not eval_docs:
        raise ValueError(f"corpus {corpus.name} is too small after tokenization: {n_train} training tokens and "
                         f"{n_eval} held-out tokens (need at least {MIN_TRAIN_TOKENS} and 1)")
    log(f"tokens: {n_train:,} for training, {n_eval:,} held out (vocabulary {len(tokenizer.vocab):,})")
    corpus.fingerprint()  # (hashed now, kept: checkpoints record it)
    corpus.documents = None  # the text: training reads the token ids (~8 MB for wiki, in every rank)
    release_freed_memory()  # reading and tokenizing the corpus freed more than training will reuse (~30 MB)
    return PreparedData(corpus, tokenizer, train_docs, eval_docs, n_train, n_eval, time.perf_counter() - start)


def _say_corpus(corpus: Corpus, eval_ids: list[int], log) -> None:
    log(f"corpus: {corpus.name}, {corpus.num_documents:,} documents, {corpus.num_words:,} words "
        f"({len(eval_ids):,} documents held out for evaluation)")


def _from_cache(key: str, tokenizer_dir, vocab_size: int, eval_fraction: float, log):
    """(corpus without its text, train ids, held-out ids, tokenizer, token ids) when the corpus's description,
    its tokenizer and its token ids are all cached (data/corpus_index.py); None otherwise."""
    from minibert.tokenizer import WordPieceTokenizer
    corpus = load_index(key)
    if corpus is None:
        return None
    train_ids, eval_ids = split_documents(corpus, eval_fraction)
    if tokenizer_dir is None:
        folder = trained_tokenizer_folder(corpus, train_ids, vocab_size)
        if not (folder / "vocab.txt").exists():
            return None
        tokenizer = WordPieceTokenizer.from_pretrained(folder)
    else:
        tokenizer = WordPieceTokenizer.from_pretrained(tokenizer_dir)
    check_tokenizer(tokenizer, tokenizer_dir or str(folder))
    tokens = cached_tokens(corpus, tokenizer)
    if tokens is None:
        return None
    _say_corpus(corpus, eval_ids, log)
    if tokenizer_dir is None:
        log(f"tokenizer: cached {folder}")
    return corpus, train_ids, eval_ids, tokenizer, tokens


def _num_tokens(tokens: TokenizedCorpus, doc_indices: np.ndarray) -> int:
    """Tokens in the given documents (from the index arrays alone)."""
    first = tokens.sentence_starts[tokens.doc_starts[doc_indices]]
    last = tokens.sentence_starts[tokens.doc_starts[doc_indices + 1]]
    return int((last - first).sum())
