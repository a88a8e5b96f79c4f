"""Sentence embeddings: run BERT over a sentence and average its token vectors (mean pooling).

This is the sentence-transformers recipe used by all-MiniLM-L6-v2:

    h = BertModel(tokens).last_hidden_state                  (B, T, H)
    e = sum_t mask[t] * h[t] / sum_t mask[t]                  (B, H)   padding does not count
    e = e / |e|                                               (B, H)   so a dot product is the cosine

Texts are tokenized first, sorted by length and batched, so each batch is padded only to its own longest
text (far fewer wasted positions than padding everything to the longest text); the rows are put back in the
caller's order at the end.

    >>> enc = SentenceEncoder.from_pretrained("minilm")      # the built-in all-MiniLM-L6-v2
    >>> enc.encode(["A cat sat.", "A dog ran."]).shape
    (2, 384)
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import numpy as np

from minibert.io import model_folder
from minibert.models.base import forward_only
from minibert.parallel import map_batches

BUILTIN_MODELS = model_folder.BUILTIN_MODELS  # names accepted in place of a folder


def resolve_model_dir(name_or_path: str | os.PathLike, option: str | None = None) -> Path:
    """A checkpoint folder, a run folder or its checkpoints/ (pre-training or distillation: its latest checkpoint),
    or the built-in name "minilm" (all-MiniLM-L6-v2 from its pip package): the rule every command shares,
    minibert.io.model_folder.resolve_model_folder (errors name `option` when given)."""
    return model_folder.resolve_model_folder(name_or_path, option)


def mean_pool(last_hidden_state: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
    """Average of the token vectors where attention_mask is 1. (B, T, H), (B, T) -> (B, H)."""
    mask = attention_mask.astype(last_hidden_state.dtype)[:, :, None]  # (B, T, 1)
    summed = (last_hidden_state * mask).sum(axis=1)  # (B, H)
    counts = np.maximum(mask.sum(axis=1), 1e-9)  # (B, 1); as sentence-transformers, never divide by 0
    return summed / counts


def l2_normalize(x: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    """Rows scaled to length 1 (a zero row stays zero). (N, H) -> (N, H)."""
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.maximum(norms, eps)


def cosine_similarity(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine of every row of a with every row of b: (N, H), (M, H) -> (N, M). 1-D inputs give a float."""
    a2, b2 = np.atleast_2d(a).astype(np.float64), np.atleast_2d(b).astype(np.float64)
    sims = l2_normalize(a2) @ l2_normalize(b2).T
    return float(sims[0, 0]) if np.ndim(a) == 1 and np.ndim(b) == 1 else sims


class SentenceEncoder:
    """A BertModel + tokenizer that turns texts into one vector each (mean pooling, L2-normalised by default)."""

    def __init__(self, model, tokenizer, max_length: int | None = None, normalize: bool = True):
        check_model_and_tokenizer("SentenceEncoder(model, tokenizer)", model, tokenizer)
        config = model.config
        vocab_size = len(tokenizer.vocab)
        if vocab_size > config.vocab_size:
            raise ValueError(f"the tokenizer has {vocab_size} tokens but the model's embedding matrix has only "
                             f"{config.vocab_size} rows (vocab_size); they must come from the same checkpoint")
        if max_length is not None:
            _check_max_length(max_length, config.max_tokens)
        # The caller's train/eval mode is left alone: each encode() runs in eval mode (forward_only) and puts the
        # mode back, so a model being fine-tuned keeps its dropout between embeddings.
        self.model = model
        # The encoder body: BertModel keeps it in .encoder, task models (pre-trained, fine-tuned) in .bert.
        self.body = model.bert if hasattr(model, "bert") else model.encoder
        self.tokenizer = tokenizer
        self.max_length = max_length or config.max_tokens
        self.normalize = normalize
        self.pad_id = tokenizer.pad_token_id or 0  # padded positions are masked out: any valid id will do
        self.name_or_path = getattr(model, "name_or_path", None)

    @property
    def dimension(self) -> int:
        """H: the length of each embedding (the model's hidden_size)."""
        return self.model.config.hidden_size

    @classmethod
    def from_pretrained(cls, name_or_path="minilm", dtype=np.float32, max_length: int | None = None,
                        normalize: bool = True) -> "SentenceEncoder":
        """Load a checkpoint folder (or "minilm"): config.json, model.safetensors, vocab.txt.

        max_length defaults to sentence_bert_config.json's max_seq_length when present (256 for MiniLM, as
        sentence-transformers truncates), else max_position_embeddings.
        """
        from minibert.config import BertConfig
        from minibert.io.checkpoint import CheckpointWarning
        from minibert.models.auto import load_body

        folder = resolve_model_dir(name_or_path)
        config = BertConfig.from_json_file(folder / "config.json")  # a bad config fails before the vocabulary is read
        # An ELECTRA discriminator (its body loads as a BERT body) has no pooler, and mean pooling needs none.
        pooler = config.model_type != "electra"
        if max_length is not None:  # asked for: checked as SentenceEncoder(model, ...) checks it, before loading
            _check_max_length(max_length, config.max_tokens)
        else:  # sentence_bert_config.json's, if any: at most what the position table allows
            max_length = _sentence_transformers_max_length(folder)
            max_length = None if max_length is None else min(max_length, config.max_tokens)
        tokenizer = load_tokenizer(folder)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", CheckpointWarning)
            # a BERT (with its pooler, unused here) or a DistilBERT (none)
            model = load_body(folder, dtype=dtype, add_pooling_layer=pooler)
        for w in caught:  # heads of a pre-training checkpoint are unused here, by design: say nothing about them
            if not (issubclass(w.category, CheckpointWarning) and "not used by" in str(w.message)):
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        return cls(model, tokenizer, max_length=max_length, normalize=normalize)

    def save_pretrained(self, folder) -> Path:
        """Write the model (config.json, model.safetensors), the tokenizer (vocab.txt, tokenizer.json,
        tokenizer_config.json) and sentence_bert_config.json (max_seq_length), so `from_pretrained(folder)` gives back
        this encoder."""
        from minibert.io.atomic import atomic_write_text
        folder = Path(folder)
        self.model.save_pretrained(folder)
        self.tokenizer.save_pretrained(folder)
        atomic_write_text(folder / "sentence_bert_config.json",
                          json.dumps({"max_seq_length": self.max_length, "do_lower_case": False}, indent=2) + "\n")
        return folder

    def tokenize(self, texts: list[str]) -> list[list[int]]:
        """Each text's token ids ([CLS] ... [SEP]), cut to max_length: what encode_token_ids takes."""
        return self.tokenize_with_lengths(texts)[0]

    def tokenize_with_lengths(self, texts: list[str]) -> tuple[list[list[int]], list[int]]:
        """(`tokenize(texts)`, each text's length in tokens before the cut): one pass gives both, so a note about
        the texts that were cut needs no second tokenization (`minibert embed`)."""
        _check_max_length(self.max_length, self.model.config.max_tokens)  # (the attribute may have been set since)
        ids, lengths = [], []
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise ValueError(f"text {i} is a {type(text).__name__}, expected a string")
            full = list(self.tokenizer.encode(text, truncation=False).input_ids)  # [CLS] A [SEP]
            lengths.append(len(full))
            # Cut as encode(text, max_length, truncation=True) cuts: the end of A goes, the closing [SEP] stays.
            ids.append(full if len(full) <= self.max_length else full[:self.max_length - 1] + full[-1:])
        return ids, lengths

    def encode(self, texts, batch_size: int = 32, normalize: bool | None = None,
               progress: bool = False, workers: int | None = None) -> np.ndarray:
        """Embeddings of `texts` (a string or a list of strings) as a (N, H) float array in input order.

        workers: batches run at once, each on its own thread and core (minibert/parallel.py); default: the
        layers' thread count (OPENBLAS_NUM_THREADS, else every core), at most the usable cores and 4. Each batch in
        flight holds its own activations. The numbers are the same either way."""
        if isinstance(texts, str):
            texts = [texts]
        texts = list(texts)
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        return self.encode_token_ids(self.tokenize(texts), batch_size, normalize, progress, workers)

    def encode_token_ids(self, token_ids: list[list[int]], batch_size: int = 32, normalize: bool | None = None,
                         progress: bool = False, workers: int | None = None) -> np.ndarray:
        """`encode` for texts already tokenized (`tokenize`): (N, H) in the order of `token_ids`."""
        normalize = self.normalize if normalize is None else normalize
        out = np.zeros((len(token_ids), self.dimension), dtype=self.model.dtype)  # (N, H)
        # Longest first: the first batch shows the worst-case memory at once, and similar lengths share a batch.
        order = sorted(range(len(token_ids)), key=lambda i: -len(token_ids[i]))
        batches = [order[start:start + batch_size] for start in range(0, len(order), batch_size)]

        def embed(rows):  # one batch, on whichever thread runs it: (b, H) mean-pooled
            input_ids, attention_mask = pad_batch([token_ids[i] for i in rows], self.pad_id)
            hidden = self.body.forward(input_ids, attention_mask=attention_mask).last_hidden_state  # (b, T, H)
            self.body._cache = None  # freed on this thread, before map_batches' hand-back (finetune/train.py)
            return mean_pool(hidden, attention_mask)

        with forward_only(self.model):  # no backward follows: the layers keep no activations
            done = map_batches(embed, batches, workers)
            if progress:
                from minibert._progress import tqdm  # widgets in a notebook, text in a terminal
                done = tqdm(done, total=len(batches), desc="embedding", unit="batch", disable=None)
            for pooled, rows in zip(done, batches):  # the batches' generator first: it runs to its end
                out[rows] = pooled  # written back to the callers' rows
        return l2_normalize(out) if normalize else out

    __call__ = encode

    def similarity(self, a: str, b: str) -> float:
        """Cosine similarity of two texts."""
        return self.similarity_of_token_ids(*self.tokenize([a, b]))

    def similarity_of_token_ids(self, a: list[int], b: list[int]) -> float:
        """`similarity` of two texts already tokenized (`tokenize`)."""
        ea, eb = self.encode_token_ids([a, b], normalize=True)
        # float32 unit vectors: their dot product may land a rounding above 1 (1.00000002 for a text and itself)
        return float(np.clip(np.dot(ea.astype(np.float64), eb.astype(np.float64)), -1.0, 1.0))


def _check_max_length(max_length, limit: int) -> None:
    """The one error for a max_length the model cannot take, however the encoder is made."""
    if isinstance(max_length, bool) or not isinstance(max_length, (int, np.integer)) or not 2 <= max_length <= limit:
        raise ValueError(f"max_length must be in 2..{limit} (max_position_embeddings), got {max_length!r}")


def check_model_and_tokenizer(call: str, model, tokenizer) -> None:
    """A one-line TypeError unless `model` is a minibert model and `tokenizer` a WordPieceTokenizer, saying so when
    the two came the wrong way round: otherwise the first attribute one of them lacks fails far from the cause
    ("'WordPieceTokenizer' object has no attribute 'config'"). `call` shows the right order:
    "SentenceEncoder(model, tokenizer)"."""
    from minibert.models.base import Model
    from minibert.tokenizer import WordPieceTokenizer

    if isinstance(model, Model) and isinstance(tokenizer, WordPieceTokenizer):
        return
    if isinstance(model, WordPieceTokenizer) and isinstance(tokenizer, Model):
        raise TypeError(f"{call}: got a {type(model).__name__} as model and a {type(tokenizer).__name__} as "
                        f"tokenizer; swap them: the model comes first")
    if not isinstance(model, Model):
        raise TypeError(f"{call}: model must be a minibert model (e.g. BertModel), got {_kind(model)}")
    raise TypeError(f"{call}: tokenizer must be a minibert WordPieceTokenizer, got {_kind(tokenizer)}")


def _kind(value) -> str:
    return "None" if value is None else f"a {type(value).__name__}"


def pad_batch(sequences: list[list[int]], pad_id: int) -> tuple[np.ndarray, np.ndarray]:
    """Right-pad token id lists to the longest: input_ids (B, T) int64 and attention_mask (B, T) int64."""
    T = max(len(s) for s in sequences)
    input_ids = np.full((len(sequences), T), pad_id, dtype=np.int64)  # (B, T)
    attention_mask = np.zeros((len(sequences), T), dtype=np.int64)  # (B, T)
    for row, s in enumerate(sequences):
        input_ids[row, :len(s)] = s
        attention_mask[row, :len(s)] = 1
    return input_ids, attention_mask


def load_tokenizer(folder: Path):
    """The WordPiece tokenizer of a checkpoint folder; a clear error when vocab.txt is missing."""
    vocab = Path(folder) / "vocab.txt"
    if not vocab.is_file() and not (Path(folder) / "tokenizer.json").is_file():
        raise FileNotFoundError(f"{vocab}: missing (and no tokenizer.json); a sentence encoder needs the tokenizer's "
                                f"vocabulary next to the model (write it with tokenizer.save_pretrained(folder))")
    from minibert.tokenizer import WordPieceTokenizer
    return WordPieceTokenizer.from_pretrained(folder)


def _sentence_transformers_max_length(folder: Path) -> int | None:
    path = folder / "sentence_bert_config.json"
    if not path.is_file():
        return None
    try:
        value = json.loads(path.read_text(encoding="utf-8")).get("max_seq_length")
    except (json.JSONDecodeError, AttributeError):
        raise ValueError(f"{path}: not a valid JSON object") from None
    if value is not None and (not isinstance(value, int) or value < 2):
        raise ValueError(f"{path}: max_seq_length must be an integer >= 2, got {value!r}")
    return value


def encode_sentences(texts, model="minilm", tokenizer=None, batch_size: int = 32, normalize: bool = True,
                     max_length: int | None = None, progress: bool = False) -> np.ndarray:
    """Sentence embeddings (N, H) of `texts`, mean-pooled and (by default) L2-normalised.

    `model` is a folder, "minilm", a SentenceEncoder, or a minibert BertModel together with `tokenizer`.
    """
    if isinstance(model, SentenceEncoder):
        encoder = model
    elif isinstance(model, (str, os.PathLike)):
        encoder = SentenceEncoder.from_pretrained(model, max_length=max_length)
    else:
        if tokenizer is None:
            raise ValueError("encode_sentences(model=<a model object>) also needs tokenizer=")
        encoder = SentenceEncoder(model, tokenizer, max_length=max_length)
    return encoder.encode(texts, batch_size=batch_size, normalize=normalize, progress=progress)
