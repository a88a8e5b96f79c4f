"""Small, fast fixtures for the fine-tuning tests: a tiny BERT folder with its own vocabulary, and a labelled
synthetic data set whose label is decided by one keyword somewhere in the text."""

import csv
import json

import numpy as np

from minibert.config import BertConfig
from minibert.models.pretraining import BertForPreTraining
from minibert.tokenizer import WordPieceTokenizer

FILLERS = ["the", "a", "cat", "dog", "house", "tree", "runs", "sits", "blue", "green", "small", "big", "on", "under"]
KEYWORDS = {"good": "positive", "bad": "negative", "okay": "neutral"}
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def make_model_dir(path, seed=0, max_position_embeddings=32, hidden_size=32):
    """A randomly initialised tiny BertForPreTraining checkpoint with a vocab.txt of the words above (a hidden size
    above 256 makes it a published-size model to finetune/recipe.py)."""
    tokenizer = WordPieceTokenizer(SPECIALS + FILLERS + list(KEYWORDS) + ["!", "unseen"])
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=hidden_size, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64, max_position_embeddings=max_position_embeddings)
    BertForPreTraining(config, seed=seed).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def make_examples(n, seed=0, classes=("positive", "negative", "neutral")):
    """n (text, label) pairs: a few filler words with the class's keyword at a random place."""
    rng = np.random.default_rng(seed)
    word_of = {label: word for word, label in KEYWORDS.items()}
    rows = []
    for i in range(n):
        label = classes[i % len(classes)]
        words = list(rng.choice(FILLERS, size=rng.integers(3, 8)))
        words.insert(int(rng.integers(0, len(words) + 1)), word_of[label])
        rows.append({"text": " ".join(words), "label": label})
    return rows


def write_rows(path, rows):
    """CSV, TSV or JSONL by the file's extension."""
    path = str(path)
    if path.endswith(".jsonl"):
        with open(path, "w", encoding="utf-8") as f:
            for row in rows:
                f.write(json.dumps(row) + "\n")
        return path
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]), delimiter="\t" if path.endswith(".tsv") else ",")
        writer.writeheader()
        writer.writerows(rows)
    return path
