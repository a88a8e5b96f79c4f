"""The baseline any fine-tuned BERT must beat: TF-IDF features + logistic regression (scikit-learn).

It sees exactly the same train / eval / test split as BERT. Its one hyper-parameter, the inverse
regularisation strength C, is chosen on the eval split from a small grid, and the test split is used once, as
for BERT: a fair (tuned) baseline makes an honest comparison.
"""

from __future__ import annotations

import time

from minibert.finetune.data import Examples, label_ids
from minibert.finetune.metrics import classification_metrics

C_GRID = (1.0, 10.0, 100.0, 1000.0, 10000.0)  # small data sets often want little regularisation


def _import_sklearn():
    try:
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
    except ImportError:
        raise ValueError("--baseline needs scikit-learn: pip install 'minibert[baseline]' "
                         "(or pip install scikit-learn)") from None
    return TfidfVectorizer, LogisticRegression


def _documents(examples: Examples) -> list[str]:
    if examples.text_pairs is None:
        return list(examples.texts)
    return [f"{a} {b}" for a, b in zip(examples.texts, examples.text_pairs)]


def choose_c(x_train, y_train, x_eval, y_eval, grid, seed: int = 0, max_iter: int = 3000, log=None):
    """(classifier, C, its eval accuracy): logistic regression fitted on train for each C of `grid`, the one
    most accurate on eval kept (the first, on a tie). `log(i, C)` is told each fit as it starts."""
    _, LogisticRegression = _import_sklearn()
    best = None
    for i, c in enumerate(grid, start=1):
        if log is not None:
            log(i, c)
        clf = LogisticRegression(C=c, max_iter=max_iter, random_state=seed).fit(x_train, y_train)
        accuracy = float((clf.predict(x_eval) == y_eval).mean())
        if best is None or accuracy > best[2]:
            best = (clf, c, accuracy)
    return best


def tfidf_baseline(train: Examples, eval_: Examples, label2id: dict[str, int], test: Examples | None = None,
                   seed: int = 0, log=None) -> dict:
    """Fit on train, choose C on eval; metrics on eval (and test), like BERT's. `log`: told each step as it starts
    (a fit on a large data set takes minutes)."""
    log = log or (lambda message: None)
    TfidfVectorizer, _ = _import_sklearn()
    names = list(label2id)
    start = time.perf_counter()
    # Word unigrams and bigrams, sublinear term frequency: the usual strong setting for topic and sentiment.
    log(f"TF-IDF baseline: word and bigram features of {len(train):,} training texts ...")
    vectorizer = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=1, strip_accents="unicode")
    x_train = vectorizer.fit_transform(_documents(train))
    x_eval = vectorizer.transform(_documents(eval_))
    y_train, y_eval = label_ids(train, label2id), label_ids(eval_, label2id)
    clf, c, _ = choose_c(x_train, y_train, x_eval, y_eval, C_GRID, seed=seed,
                         log=lambda i, c: log(f"TF-IDF baseline: logistic regression with C={c:g} ({i} of "
                                              f"{len(C_GRID)}) ..."))

    def predict(x):  # the classifier only knows the classes present in train; map back to our ids
        return clf.classes_[clf.predict_proba(x).argmax(axis=1)]

    result = {"method": "tfidf+logistic_regression", "C": c,
              "eval": classification_metrics(y_eval, predict(x_eval), names)}
    if test is not None:
        result["test"] = classification_metrics(label_ids(test, label2id),
                                                predict(vectorizer.transform(_documents(test))), names)
    result["time_s"] = round(time.perf_counter() - start, 1)
    return result
