"""Generated NER and QA data sets where the right answer is known: sanity checks of the whole pipeline.

They are NOT benchmarks: the sentences come from a dozen templates, so a working tagger or reader should score
near 100%, and a broken one (labels on the wrong piece, answers mapped to the wrong tokens) visibly does not.
Train and eval use disjoint name lists, so the model must read the context, not remember the names.

    python -m minibert.finetune.synthetic --out data/synthetic     # writes the files listed in write_all()
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

FIRST = ["Anna", "Boris", "Clara", "David", "Elena", "Farid", "Grace", "Hugo", "Ines", "Jonas", "Kemal", "Lena",
         "Marco", "Nadia", "Oscar", "Paula", "Quentin", "Rosa", "Samir", "Tara", "Ulrich", "Vera", "Walter", "Yusuf"]
LAST = ["Schmidt", "Okafor", "Lindqvist", "Moreau", "Tanaka", "Novak", "Garcia", "Kowalski", "Byrne", "Rossi",
        "Haddad", "Petrov", "Jensen", "Silva", "Dubois", "Weber"]
# Multi-word names in both parts, so that inside words (I-LOC) occur in training and in eval.
CITIES = ["Paris", "New York", "Lagos", "Osaka", "San Diego", "Lima", "Buenos Aires", "Oslo", "Hong Kong", "Cairo",
          "Denver", "Rio de Janeiro", "Porto", "Leeds", "Addis Ababa", "Hanoi", "Tunis", "Perth",
          "Graz", "Cape Town", "Malmo", "Kuala Lumpur", "Santa Fe", "Cork"]
ORGS = ["Acme Corp", "Globex", "Initech", "Umbrella Labs", "Stark Industries", "Wayne Foods", "Hooli",
        "Vandelay Imports", "Soylent", "Cyberdyne Systems", "Tyrell Corporation", "Wonka Industries", "Aperture"]
YEARS = [str(y) for y in range(1950, 2020)]

# Each template: words, with {PER}, {LOC}, {ORG} slots (an entity may be several words).
NER_TEMPLATES = [
    "{PER} moved to {LOC} last year .", "{PER} works for {ORG} in {LOC} .", "{ORG} opened an office in {LOC} .",
    "Yesterday {PER} met {PER} at the {ORG} headquarters .", "The mayor of {LOC} praised {ORG} .",
    "{PER} left {ORG} to start a bakery .", "In {LOC} , {PER} gave a talk about rivers .",
    "{ORG} hired {PER} as its new chief engineer .", "Flights from {LOC} to {LOC} were cancelled .",
    "According to {PER} , the weather in {LOC} was fine .", "Shares of {ORG} rose after {PER} spoke .",
    "She said the report was late again .",
]


def _split(items: list[str], part: str) -> list[str]:
    """Three quarters of a list for 'train', the rest for 'eval': names never seen in training at eval."""
    cut = max(1, (3 * len(items)) // 4)
    return items[:cut] if part == "train" else items[cut:]


def _entity(kind: str, rng, part: str) -> str:
    if kind == "PER":
        first, last = _split(FIRST, part), _split(LAST, part)
        return f"{first[rng.integers(len(first))]} {last[rng.integers(len(last))]}" if rng.random() < 0.7 \
            else first[rng.integers(len(first))]
    pool = _split(CITIES if kind == "LOC" else ORGS, part)
    return pool[rng.integers(len(pool))]


def ner_sentences(n: int, seed: int, part: str = "train") -> tuple[list[list[str]], list[list[str]]]:
    """n sentences (word lists) and their IOB2 tags."""
    rng = np.random.default_rng(seed)
    words_out, tags_out = [], []
    for _ in range(n):
        words, tags = [], []
        for token in NER_TEMPLATES[rng.integers(len(NER_TEMPLATES))].split():
            if token.startswith("{"):
                kind = token[1:4]
                entity = _entity(kind, rng, part).split()
                words += entity
                tags += [f"B-{kind}"] + [f"I-{kind}"] * (len(entity) - 1)
            else:
                words.append(token)
                tags.append("O")
        words_out.append(words)
        tags_out.append(tags)
    return words_out, tags_out


def write_conll(path, words, tags):
    lines = ["-DOCSTART- -X- -X- O", ""]
    for sentence, sentence_tags in zip(words, tags):
        lines += [f"{w} {t}" for w, t in zip(sentence, sentence_tags)] + [""]
    Path(path).write_text("\n".join(lines), encoding="utf-8")


def write_tagged_jsonl(path, words, tags):
    Path(path).write_text("".join(json.dumps({"tokens": w, "tags": t}) + "\n" for w, t in zip(words, tags)),
                          encoding="utf-8")


# ---------------------------------------------------------------------------- question answering
FACTS = [  # (sentence, question, answer slot); slots are filled per paragraph
    ("{PER} was born in {LOC} in {YEAR} .", "Where was {PER} born?", "LOC"),
    ("{PER} was born in {LOC} in {YEAR} .", "When was {PER} born?", "YEAR"),
    ("{PER} works for {ORG} .", "Which company does {PER} work for?", "ORG"),
    ("{ORG} was founded in {LOC} .", "Where was {ORG} founded?", "LOC"),
    ("The head of {ORG} is {PER} .", "Who is the head of {ORG}?", "PER"),
]


def qa_paragraphs(n: int, seed: int, part: str = "train", impossible: float = 0.0) -> list[dict]:
    """n SQuAD paragraphs of three facts each, one question per fact; with `impossible` > 0 (SQuAD 2.0), that
    share of extra questions asks about a name that is not in the paragraph."""
    rng = np.random.default_rng(seed)
    paragraphs = []
    for p in range(n):
        sentences, qas = [], []
        for f in rng.choice(len(FACTS), size=3, replace=False):
            template, question, slot = FACTS[f]
            values = {k: _entity(k, rng, part) for k in ("PER", "LOC", "ORG")}
            values["YEAR"] = YEARS[rng.integers(len(YEARS))]
            sentence = template.format(**values).replace(" .", ".")
            start = len(" ".join(sentences)) + (1 if sentences else 0)
            answer = values[slot]
            qas.append({"id": f"{part}-{p}-{len(qas)}", "question": question.format(**values),
                        "answers": [{"text": answer, "answer_start": start + sentence.index(answer)}],
                        "is_impossible": False})
            sentences.append(sentence)
        if impossible and rng.random() < impossible:
            other = _entity("PER", rng, part)
            if other not in " ".join(sentences):
                qas.append({"id": f"{part}-{p}-{len(qas)}", "question": f"Where was {other} born?", "answers": [],
                            "is_impossible": True})
        paragraphs.append({"context": " ".join(sentences), "qas": qas})
    return paragraphs


def write_squad(path, paragraphs, version: str):
    data = {"version": version, "data": [{"title": "synthetic", "paragraphs": paragraphs}]}
    Path(path).write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


def write_all(out, ner_train=2000, ner_eval=300, qa_train=1500, qa_eval=200, seed=0):
    """ner_train.conll, ner_eval.conll, ner_eval.jsonl, qa_train.json / qa_eval.json (v1.1) and qa2_train.json /
    qa2_eval.json (v2.0, with unanswerable questions)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    write_conll(out / "ner_train.conll", *ner_sentences(ner_train, seed, "train"))
    eval_words, eval_tags = ner_sentences(ner_eval, seed + 1, "eval")
    write_conll(out / "ner_eval.conll", eval_words, eval_tags)
    write_tagged_jsonl(out / "ner_eval.jsonl", eval_words, eval_tags)
    write_squad(out / "qa_train.json", qa_paragraphs(qa_train, seed, "train"), "1.1")
    write_squad(out / "qa_eval.json", qa_paragraphs(qa_eval, seed + 1, "eval"), "1.1")
    write_squad(out / "qa2_train.json", qa_paragraphs(qa_train, seed, "train", impossible=0.5), "v2.0")
    write_squad(out / "qa2_eval.json", qa_paragraphs(qa_eval, seed + 1, "eval", impossible=0.5), "v2.0")
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Write the generated NER and QA sanity-check sets.")
    parser.add_argument("--out", default="data/synthetic", help="folder for the files (default data/synthetic)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(f"wrote {write_all(args.out, seed=args.seed)}/")
