"""Continued pre-training (`--init`): a run that starts from an existing model instead of from scratch.

The model given (a minibert run folder, one of its checkpoints, or a Hugging Face folder: whatever `--model`
takes, minibert/io/model_folder.py) brings its config, its weights and its vocabulary: no tokenizer is trained,
the corpus is tokenized with the model's vocab.txt, and the weights at step 0 are the model's, masked-LM head and
its output bias included. The run is an ordinary run from there on (its own folder, checkpoints, --resume,
--minutes). The model must have a masked-LM head: a sentence-embedding model (all-MiniLM-L6-v2) has none.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

from minibert.config import BertConfig
from minibert.io.checkpoint import CheckpointWarning, TensorSource
from minibert.io.model_folder import CONFIG, resolve_model_and_tokenizer
from minibert.training.settings import option

HEAD_MARKERS = ("predictions.", "lm_head.")  # BERT's cls.predictions.*, ALBERT's predictions.*, RoBERTa's lm_head.*


@dataclass
class InitModel:
    folder: Path       # the model folder (config.json and weights)
    tokenizer: Path    # the folder of its vocab.txt
    config: BertConfig


def check_init(init: str) -> InitModel:
    """The model `init` names, checked without reading its weights: one line if the folder is missing, has no
    masked-LM head, or its vocabulary does not fit its config."""
    from minibert.tokenizer import WordPieceTokenizer
    where = f"{option('init')} {init}"
    folder, tokenizer_dir = resolve_model_and_tokenizer(init, "--init")
    config = BertConfig.from_json_file(folder / CONFIG)
    names = TensorSource(folder).names()
    if not any(marker in name for name in names for marker in HEAD_MARKERS):
        raise ValueError(f"{where}: {folder} has no masked-LM head (no cls.predictions.* weights; a sentence-"
                         f"embedding model such as all-MiniLM-L6-v2 has none): continued pre-training needs a model "
                         f"saved with its head (a minibert run, a Hugging Face *ForMaskedLM or *ForPreTraining)")
    vocab = len(WordPieceTokenizer.from_pretrained(tokenizer_dir).vocab)
    if vocab != config.vocab_size:
        raise ValueError(f"{where}: its vocab.txt has {vocab} tokens but config.json says vocab_size "
                         f"{config.vocab_size}")
    return InitModel(folder, tokenizer_dir, config)


def load_init_model(settings, build_model, log=print):
    """The model of `settings.init`, its weights as saved, in the class the objective trains; `settings.dropout`
    replaces the config's dropout as it does for a new model. Weights the folder lacks (say, the next-sentence
    head of a masked-LM-only model) start as a new model's would, as a note says."""
    init = check_init(settings.init)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CheckpointWarning)
        model = build_model(settings, checkpoint=init.folder)
    for warning in caught:
        if issubclass(warning.category, CheckpointWarning):
            log(f"note: {warning.message}")
        else:
            warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    if settings.dropout is not None:
        model.config.hidden_dropout_prob = model.config.attention_probs_dropout_prob = settings.dropout
    return model
