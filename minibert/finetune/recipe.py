"""The fine-tuning recipe a run uses when its flags do not say: chosen from the model and the data.

Two kinds of starting model want different recipes:

- a published-size checkpoint (hidden size above SMALL_HIDDEN, e.g. all-MiniLM-L6-v2 or BERT-base): BERT's own
  recipe, a small learning rate (3e-5) that adjusts well-trained weights without erasing them;
- a small model pre-trained from scratch (hidden size SMALL_HIDDEN or less, e.g. `minibert pretrain`'s mini):
  a learning rate ten times higher, as small models are fine-tuned (ELECTRA-Small: 3e-4), since its [CLS]
  vector and pooler were never trained for sentences, and dropout 0.1 where pre-training used none.

Both take as many epochs as give the run at least MIN_STEPS optimizer steps (at least 3, at most MAX_EPOCHS):
541 training texts at batch 32 are 17 steps an epoch, and 3 epochs of them leave a classifier at the majority
class. A word tagger (--task-type tokens) gets the same minimum of steps, and on little data (fewer than
SMALL_TOKEN_DATA training sentences) a published-size model a higher learning rate (1e-4): MiniLM on ~1,900 NER
sentences at 3e-5 for 3 epochs (162 steps) learned to say O everywhere (entity F1 0.0), at 1e-4 for 6 epochs it
reached 0.32. Texts longer than the model's window are read whole, as overlapping windows (windows.py), when the model
has fewer than WINDOWS_BELOW positions; a longer model truncates them, or reads them as the task says (imdb: head and
tail, head_tail.py). On imdb the mini (64 positions) fine-tunes 7 to 11 points higher with windows than with head and
tail, which keep a fifth of a review in 64 positions but most of it in MiniLM's 256.

Every value is a default only: a flag given on the command line wins, and the log says which values came from
where. docs/finetuning.md has the experiments these numbers come from.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

SMALL_HIDDEN = 256  # hidden size of the largest model that gets the small-model recipe (the mini has 192)
MIN_STEPS = 300  # optimizer steps a run gets at least, through more epochs
MAX_EPOCHS = 20
SMALL_TOKEN_DATA = 5000  # a tagger trained on fewer sentences than this gets TOKENS_SMALL_DATA_LR (published models)
TOKENS_SMALL_DATA_LR = 1e-4
WINDOWS_BELOW = 128  # models with fewer positions read long texts as windows (the mini has 64)


@dataclass
class Recipe:
    lr: float
    epochs: int | None  # None: epochs_for(the number of training examples), once they are known
    dropout: float | None  # None: the checkpoint's own
    long_texts: str  # "truncate", "windows" or "head-tail"
    window_overlap: int
    kind: str  # which recipe, for the log
    flags: tuple = ()  # the values that flags gave rather than the recipe


def epochs_for(num_examples: int, batch_size: int) -> int:
    """Enough epochs for MIN_STEPS optimizer steps over num_examples training examples (windows count as
    examples), at least 3 and at most MAX_EPOCHS."""
    steps_per_epoch = max(1, math.ceil(num_examples / batch_size))
    return min(MAX_EPOCHS, max(3, math.ceil(MIN_STEPS / steps_per_epoch)))


def model_kind(config) -> str:
    return "small" if config.hidden_size <= SMALL_HIDDEN else "published"


def choose_recipe(config, max_length: int, given: dict, task_type: str = "sequence", pairs: bool = False,
                  num_train: int | None = None, published_lr: float | None = None,
                  long_model_texts: str | None = None) -> Recipe:
    """The recipe for a model (its BertConfig) at a run's max length. `given`: the values set by flags (None for
    those not given), which win. Windows apply to the single texts of text classification only (pairs are
    truncated, longest first); epochs are 3 for --task-type qa. num_train: the training sentences of a tagger
    (tokens), whose learning rate depends on how many there are (None: not known yet, as for plenty).
    published_lr: a built-in task's learning rate for a published-size model, measured on that task (tasks.py),
    in place of BERT's 3e-5; a small model keeps its own. long_model_texts: how a model of WINDOWS_BELOW positions
    or more reads a built-in task's long single texts ("head-tail" for imdb; None: truncated); a shorter model
    reads them as windows."""
    small = model_kind(config) == "small"
    few_sentences = task_type == "tokens" and not small and num_train is not None and num_train < SMALL_TOKEN_DATA
    lr = 5e-4 if small else (published_lr or 3e-5)
    if few_sentences:
        lr = max(lr, TOKENS_SMALL_DATA_LR)
    if task_type != "sequence" or pairs:
        long_texts = "truncate"
    elif config.max_tokens < WINDOWS_BELOW:
        long_texts = "windows"
    else:
        long_texts = long_model_texts or "truncate"
    values = {"lr": lr, "dropout": 0.1 if small else None,
              "epochs": 3 if task_type == "qa" else None,
              "long_texts": long_texts,
              "window_overlap": max_length // 4}
    flags = tuple(name for name in values if given.get(name) is not None)
    values.update({name: given[name] for name in flags})
    kind = (f"small model (hidden size {config.hidden_size} <= {SMALL_HIDDEN})" if small else
            f"published-size model (hidden size {config.hidden_size} > {SMALL_HIDDEN}), BERT's recipe")
    if not small and "lr" not in flags:
        if few_sentences and lr == TOKENS_SMALL_DATA_LR:
            kind += f", a higher lr for a tagger on fewer than {SMALL_TOKEN_DATA:,} sentences"
        elif published_lr:
            kind += f" with the task's lr {published_lr:g}"
    return Recipe(kind=kind, flags=flags, **values)


def describe(settings, kind: str, flags=()) -> str:
    """The log's line: the recipe's kind and the values it chose, those of flags marked."""
    mark = lambda name: " (flag)" if name in flags else ""  # noqa: E731
    dropout = settings.dropout if settings.dropout is not None else "of the checkpoint"
    texts = {"windows": f"long texts as windows sharing {settings.window_overlap} tokens",
             "head-tail": "long texts as their head and tail"}.get(settings.long_texts, "long texts truncated")
    return (f"recipe: {kind}: lr {settings.lr:g}{mark('lr')}, {settings.epochs} epochs{mark('epochs')}, dropout "
            f"{dropout}{mark('dropout')}, {texts}{mark('long_texts')}")
