"""IMDB film reviews (Maas et al., 2011): is a review positive or negative? Two balanced classes, long texts
(a mean of 228 words, 281 MiniLM word pieces; 37% of the reviews are longer than a 256-token window), scored by
accuracy and macro-F1.

The reviews and their one fixed split (train 50% / eval 10% / test 40%, stratified, seed 0) are minibert's
(minibert/data/imdb.py), shared with the `imdb` pre-training corpus, so that no eval or test review is ever
pre-trained on. A review longer than the window is read as its head and tail by a model of 128 positions or
more (head_tail.py), and as overlapping windows by a shorter one such as the mini (windows.py, recipe.py).
"""

from __future__ import annotations


def load():
    from minibert.finetune.task_data import Task
    from minibert.data.imdb import load_imdb
    from minibert.finetune.data import Examples

    parts = load_imdb()
    examples = {part: Examples(reviews.texts, reviews.labels, source=f"imdb ({part})")
                for part, reviews in parts.items()}
    return Task("imdb", "sentiment of a film review (negative / positive)", examples["train"],
                      examples["eval"], examples["test"])
