"""CoNLL-2003 English named entities (Tjong Kim Sang and De Meulder, 2003): PER, ORG, LOC, MISC.

The data package's three files are the shared task's own splits: train (14,041 sentences), valid (3,250, the
eval split that picks the best epoch) and test (3,453, scored once). Lines are `token POS chunk NER`, the tags
in IOB2; ner_data.read_conll reads them (the tag is the last column) and skips the `-DOCSTART-` lines. Scores
are entity-level precision, recall and F1 by CoNLL's rules (ner_metrics.py).
"""

from __future__ import annotations


def load():
    from minibert.finetune.task_data import Task
    from minibert.data.builtin import conll2003_path
    from minibert.finetune.ner_data import read_tagged

    train, eval_, test = (read_tagged(conll2003_path(split)) for split in ("train", "valid", "test"))
    return Task("conll2003", "named entities in Reuters news (PER, ORG, LOC, MISC)", train, eval_, test)
