"""Tagged sentences for token classification (NER): CoNLL files and JSONL, IOB1 -> IOB2, the tag set.

CoNLL (CoNLL-2003 and the many files shaped like it): one token per line, columns separated by white space,
the token first and its tag in the LAST column; a blank line between sentences; `-DOCSTART-` lines skipped.
JSONL: one object per line, {"tokens": [...], "tags": [...]} of the same length. JSONL files are known by
their suffix; every other file is read as CoNLL, whose files come under all sorts of names (CoNLL-2003's own are
eng.train, eng.testa and eng.testb).

Tags are IOB: "O", "B-TYPE" (first word of an entity), "I-TYPE" (inside it). CoNLL-2003 as distributed is in
IOB1, where B- appears only between two adjacent entities of the same type; every file is converted to IOB2
(every entity starts with B-), which a converted IOB2 file is left as. Every problem is one line naming the
file and line, found before any model is loaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

# The usual names of CoNLL files. Others are read as CoNLL too; their format errors then say so, in case the file
# was meant to be something else (a CSV file, say).
CONLL_SUFFIXES = (".conll", ".txt", ".iob", ".bio", ".tsv", ".conllu", ".ner", ".train", ".testa", ".testb",
                  ".dev", ".test", "")
JSONL_SUFFIXES = (".jsonl", ".ndjson", ".json")


@dataclass
class TaggedSentences:
    """Parallel lists: words[i] is a sentence (list of words), tags[i] its IOB2 tags (None when unlabelled)."""

    words: list[list[str]]
    tags: list[list[str]] | None
    source: str = "sentences"

    def __len__(self) -> int:
        return len(self.words)


def check_tag(tag: str, where: str) -> str:
    if tag == "O" or (len(tag) > 2 and tag[:2] in ("B-", "I-")):
        return tag
    raise ValueError(f"{where}: tag {tag!r} is not IOB; expected O, B-TYPE or I-TYPE")


def iob1_to_iob2(tags: list[str]) -> list[str]:
    """I-X that starts an entity (after O or after another type) becomes B-X; IOB2 input is unchanged."""
    out = []
    for i, tag in enumerate(tags):
        if tag.startswith("I-") and (i == 0 or out[i - 1][2:] != tag[2:]):
            tag = "B-" + tag[2:]
        out.append(tag)
    return out


def read_conll(path) -> TaggedSentences:
    from minibert.io.atomic import read_text_file

    path = Path(path)
    unusual = "" if path.suffix.lower() in CONLL_SUFFIXES else \
        f" (read as CoNLL: only {', '.join(JSONL_SUFFIXES)} files are read as JSONL)"
    words, tags, sentence, sentence_tags = [], [], [], []
    for n, line in enumerate(read_text_file(path).split("\n"), start=1):  # (as reading the file line by line)
        columns = line.split()
        if not columns:
            if sentence:
                words.append(sentence)
                tags.append(sentence_tags)
            sentence, sentence_tags = [], []
            continue
        if columns[0] == "-DOCSTART-":
            continue
        if len(columns) < 2:
            raise ValueError(f"{path}:{n}: expected a token and its tag separated by white space (the tag in "
                             f"the last column), got {line.strip()[:60]!r}{unusual}")
        sentence.append(columns[0])
        sentence_tags.append(check_tag(columns[-1], f"{path}:{n}"))
    if sentence:
        words.append(sentence)
        tags.append(sentence_tags)
    return TaggedSentences(words, [iob1_to_iob2(t) for t in tags], str(path))


def read_tagged_jsonl(path, tokens_field: str = "tokens", tags_field: str = "tags") -> TaggedSentences:
    from minibert.finetune.data import read_rows

    words, tags = [], []
    for n, row in enumerate(read_rows(path), start=1):
        where = f"{path}: sentence {n}"
        sentence = row.get(tokens_field)
        if not isinstance(sentence, list) or not all(isinstance(w, str) for w in sentence):
            raise ValueError(f"{where}: expected {tokens_field!r} as a list of strings (and {tags_field!r})")
        sentence_tags = row.get(tags_field)
        if sentence_tags is not None:
            if not isinstance(sentence_tags, list) or len(sentence_tags) != len(sentence):
                raise ValueError(f"{where}: {tags_field!r} must be a list as long as {tokens_field!r} "
                                 f"({len(sentence)}), got {str(sentence_tags)[:60]}")
            sentence_tags = [check_tag(str(t), where) for t in sentence_tags]
        if sentence:
            words.append(sentence)
            tags.append(sentence_tags)
    labelled = [t is not None for t in tags]
    if any(labelled) and not all(labelled):
        raise ValueError(f"{path}: sentence {labelled.index(False) + 1} has no {tags_field!r} while others have "
                         f"them; label every sentence or none")
    return TaggedSentences(words, [iob1_to_iob2(t) for t in tags] if all(labelled) else None, str(path))


def read_tagged(path) -> TaggedSentences:
    """JSONL by the file's extension, else CoNLL; a missing or empty file is one clear error."""
    from minibert.io.atomic import check_input_file
    path = Path(path)
    check_input_file(path, expected="a CoNLL or .jsonl file")
    data = read_tagged_jsonl(path) if path.suffix.lower() in JSONL_SUFFIXES else read_conll(path)
    if not data.words:
        raise ValueError(f"{path}: no sentences in the file")
    return data


# ---------------------------------------------------------------------------- the tag set
def build_tag_names(train: TaggedSentences) -> list[str]:
    """"O", then B-TYPE and I-TYPE for every entity type of the training data (both, so that the model can
    predict an inside word of a type whose training entities were all one word long)."""
    types = sorted({t[2:] for sentence in train.tags for t in sentence if t != "O"})
    if not types:
        raise ValueError(f"{train.source}: every tag is 'O'; a tagger needs at least one entity type")
    return ["O"] + [f"{prefix}-{name}" for name in types for prefix in ("B", "I")]


def check_tags_known(data: TaggedSentences, tag_names: list[str], trained_on: str):
    """An eval tag the model cannot predict: one line before training starts."""
    known = set(tag_names)
    for i, sentence in enumerate(data.tags or []):
        for tag in sentence:
            if tag not in known:
                types = sorted({t[2:] for t in known if t != "O"})
                raise ValueError(f"{data.source}: sentence {i + 1} has tag {tag!r}, whose type is not in {trained_on} "
                                 f"(entity types there: {', '.join(types)})")
