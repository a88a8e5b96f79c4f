"""The baselines a fine-tuned similarity model must beat, neither trained on the scores:

- TF-IDF cosine: the cosine of the two sentences' TF-IDF vectors (scikit-learn; the vocabulary and document
  frequencies fitted on the training sentences): how many (rare) words they share;
- zero-shot sentence embeddings: the cosine of the two sentences' mean-pooled vectors from the starting model,
  before fine-tuning (minibert's SentenceEncoder). For all-MiniLM-L6-v2, trained on sentence pairs, a strong one.

Both are scored as the fine-tuned model is, by Spearman's and Pearson's correlation with the gold scores; a
cosine in [-1, 1] need not be on the scores' 0-5 scale, so their mean squared error means nothing.
"""

from __future__ import annotations

import time

import numpy as np

from minibert.finetune.similarity_metrics import similarity_metrics
from minibert.finetune.stsb import ScoredPairs


def tfidf_cosine(train: ScoredPairs, splits: dict) -> dict:
    from minibert.finetune.baseline import _import_sklearn

    TfidfVectorizer, _ = _import_sklearn()
    vectorizer = TfidfVectorizer(sublinear_tf=True, strip_accents="unicode").fit(train.first + train.second)
    metrics = {}
    for name, data in splits.items():
        # TfidfVectorizer's rows have unit length (its norm="l2"), so a row's dot product is the cosine; a
        # sentence with no word of the vocabulary is a zero row, with cosine 0
        first, second = vectorizer.transform(data.first), vectorizer.transform(data.second)  # (N, V) sparse
        cosines = np.asarray(first.multiply(second).sum(axis=1)).ravel()  # (N,)
        metrics[name] = similarity_metrics(cosines, data.scores)
    return metrics


def embedding_cosine(checkpoint, splits: dict, max_length: int) -> dict:
    from minibert.embeddings import SentenceEncoder

    encoder = SentenceEncoder.from_pretrained(checkpoint, max_length=max_length)
    return {name: similarity_metrics((encoder.encode(data.first) * encoder.encode(data.second)).sum(axis=1),
                                     data.scores) for name, data in splits.items()}  # (normalized: dot = cosine)


def similarity_baselines(train: ScoredPairs, eval_: ScoredPairs, test: ScoredPairs | None, checkpoint,
                         max_length: int, log=None) -> dict:
    """{"tfidf_cosine": {"eval": ..., "test": ...}, "zero_shot_cosine": {...}}: both baselines' metrics."""
    log = log or (lambda message: None)
    splits = {"eval": eval_, **({"test": test} if test is not None else {})}
    start = time.perf_counter()
    log("baselines: TF-IDF cosine ...")
    result = {"tfidf_cosine": {"method": "tfidf_cosine", **tfidf_cosine(train, splits)}}
    log(f"baselines: cosine of the starting model's mean-pooled sentence vectors ({checkpoint}) ...")
    result["zero_shot_cosine"] = {"method": "zero_shot_cosine", **embedding_cosine(checkpoint, splits, max_length)}
    result["time_s"] = round(time.perf_counter() - start, 1)
    return result
