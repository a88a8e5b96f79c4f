"""The baseline a fine-tuned word tagger must beat: a classical feature tagger, a CRF (sklearn-crfsuite) where it
installs, else scikit-learn's logistic regression word by word, over the features NER systems used before BERT:
the word, its lower case, shape (Xxxx, dd), prefixes and suffixes, and the same of its neighbours.

It sees exactly the same train / eval / test sentences as BERT and is scored by the same entity-level metrics
(ner_metrics.py). Its regularisation is the usual default (CRF: c1 0.1, c2 0.1; logistic regression: C 1), not
tuned on eval, so it is a floor.
"""

from __future__ import annotations

import re
import time

from minibert.finetune.ner_data import TaggedSentences
from minibert.finetune.ner_metrics import entity_metrics


def import_tagger():
    """("crf", sklearn_crfsuite.CRF) or ("logistic_regression", None) where only scikit-learn is installed."""
    try:
        import sklearn_crfsuite
        return "crf", sklearn_crfsuite.CRF
    except ImportError:
        pass
    try:
        import sklearn  # noqa: F401
    except ImportError:
        raise ValueError("--baseline needs scikit-learn (or sklearn-crfsuite): pip install 'minibert[baseline]'") \
            from None
    return "logistic_regression", None


def shape(word: str) -> str:
    """'Anna' -> 'Xx', 'EU' -> 'X', '1996-08' -> 'd-d': character classes, repeats squeezed."""
    classes = "".join("X" if c.isupper() else "x" if c.islower() else "d" if c.isdigit() else c for c in word)
    return re.sub(r"(.)\1+", r"\1", classes)


def word_features(word: str, prefix: str) -> dict:
    lower = word.lower()
    return {f"{prefix}lower": lower, f"{prefix}shape": shape(word), f"{prefix}suffix3": lower[-3:],
            f"{prefix}prefix3": lower[:3], f"{prefix}title": word.istitle(), f"{prefix}upper": word.isupper(),
            f"{prefix}digit": any(c.isdigit() for c in word)}


def sentence_features(words: list[str]) -> list[dict]:
    """One dict of features per word: its own (with its suffix of 2 and the word as written), and its
    neighbours' at -2..+2 (sentence boundaries marked)."""
    out = []
    for i, word in enumerate(words):
        f = {"bias": 1.0, "word": word, "suffix2": word.lower()[-2:], **word_features(word, "")}
        for offset in (-2, -1, 1, 2):
            j = i + offset
            if 0 <= j < len(words):
                f.update(word_features(words[j], f"{offset:+d}:"))
            else:
                f[f"{offset:+d}:edge"] = True
        out.append(f)
    return out


def _fit_predict(kind, crf_class, train: TaggedSentences, others: list[TaggedSentences], seed: int):
    x_train = [sentence_features(w) for w in train.words]
    if kind == "crf":
        model = crf_class(algorithm="lbfgs", c1=0.1, c2=0.1, max_iterations=100, all_possible_transitions=True)
        model.fit(x_train, train.tags)
        return [model.predict([sentence_features(w) for w in data.words]) for data in others]
    from sklearn.feature_extraction import DictVectorizer
    from sklearn.linear_model import LogisticRegression

    vectorizer = DictVectorizer()
    x = vectorizer.fit_transform([f for sentence in x_train for f in sentence])
    y = [t for tags in train.tags for t in tags]
    model = LogisticRegression(C=1.0, max_iter=1000, random_state=seed).fit(x, y)
    predictions = []
    for data in others:
        flat = list(model.predict(vectorizer.transform([f for w in data.words for f in sentence_features(w)])))
        sentences, start = [], 0
        for words in data.words:
            sentences.append(flat[start:start + len(words)])
            start += len(words)
        predictions.append(sentences)
    return predictions


def tagger_baseline(train: TaggedSentences, eval_: TaggedSentences, test: TaggedSentences | None = None,
                    seed: int = 0, log=None) -> dict:
    """Fit on train; entity-level metrics on eval (and test), as BERT's."""
    log = log or (lambda message: None)
    kind, crf_class = import_tagger()
    start = time.perf_counter()
    log(f"feature tagger baseline ({kind.replace('_', ' ')}) on {len(train):,} training sentences ...")
    others = [eval_] + ([test] if test is not None else [])
    predicted = _fit_predict(kind, crf_class, train, others, seed)
    result = {"method": f"features+{kind}", "eval": entity_metrics(eval_.tags, predicted[0])}
    if test is not None:
        result["test"] = entity_metrics(test.tags, predicted[1])
    result["time_s"] = round(time.perf_counter() - start, 1)
    return result
