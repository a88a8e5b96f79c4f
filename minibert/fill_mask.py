"""Fill in [MASK] tokens with a masked-language model: what pre-training teaches, made visible.

    from minibert.fill_mask import FillMask
    fill = FillMask.from_pretrained("runs/mini-wiki-20250101-120000")   # a run folder or a model folder
    fill("paris is the capital of [MASK].", top_k=5)
    # [[{"token_str": "france", "score": 0.61, "token": 1234, "sequence": "paris is the capital of france."},
    #   ...]]                                     one list per [MASK], best first (as Hugging Face's pipeline)
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from minibert.layers.attention import softmax_forward
from minibert.layers.loss import IGNORE_INDEX
from minibert.models.base import forward_only


class FillMask:
    """`FillMask(model, tokenizer)(text, top_k=5)`: for each [MASK] in text, the top_k guesses of a masked-LM model
    (BertForMaskedLM, BertForPreTraining, DistilBertForMaskedLM, DebertaV2ForMaskedLM, ELECTRA's generator), best
    first, as transformers' fill-mask pipeline gives them; the model's train/eval mode is left as it was."""

    def __init__(self, model, tokenizer):
        from minibert.embeddings import check_model_and_tokenizer
        check_model_and_tokenizer("FillMask(model, tokenizer)", model, tokenizer)
        if tokenizer.mask_token_id is None:
            raise ValueError("the tokenizer has no [MASK] token")
        # The caller's train/eval mode is left alone: each fill runs in eval mode and puts the mode back (fill_mask)
        self.model, self.tokenizer = model, tokenizer

    @classmethod
    def from_pretrained(cls, path: str | Path, option: str | None = None) -> "FillMask":
        """Load a model folder (config.json, model.safetensors, vocab.txt) or a run folder's latest checkpoint;
        an error about `path` names `option` when given (the command's "--model")."""
        from minibert.models import BertForMaskedLM, BertForPreTraining
        from minibert.tokenizer import WordPieceTokenizer
        from minibert.io.model_folder import resolve_model_folder
        folder = resolve_model_folder(path, option)
        tokenizer_folder = folder
        if not _has_mlm_head(folder) and (folder / "generator" / "config.json").is_file():
            folder = folder / "generator"  # ELECTRA: the discriminator has no MLM head, its generator has one
        if not _has_mlm_head(folder):
            raise ValueError(f"{folder}: the checkpoint has no masked-LM head (a bare or fine-tuned encoder), so it "
                             f"cannot fill in [MASK]s; use a model pre-trained with masked language modelling")
        architectures = json.loads((folder / "config.json").read_text(encoding="utf-8")).get("architectures") or []
        # minibert's pre-training checkpoints keep the sentence head (RoBERTa's too, saved as ...ForMaskedLM)
        with_pair_head = any(a.endswith("ForPreTraining") for a in architectures) or _has_pair_head(folder)
        model_class = BertForPreTraining if with_pair_head else BertForMaskedLM
        if "ElectraForMaskedLM" in architectures:
            from minibert.models.electra import ElectraForMaskedLM
            model_class = ElectraForMaskedLM
        if "DistilBertForMaskedLM" in architectures:
            from minibert.models.distilbert import DistilBertForMaskedLM
            model_class = DistilBertForMaskedLM
        if "DebertaV2ForMaskedLM" in architectures:
            from minibert.models.deberta import DebertaV2ForMaskedLM
            model_class = DebertaV2ForMaskedLM
        return cls(model_class.from_pretrained(folder), WordPieceTokenizer.from_pretrained(tokenizer_folder))

    def __call__(self, text: str, top_k: int = 5) -> list[list[dict]]:
        return fill_mask(self.model, self.tokenizer, text, top_k)

    def encode(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """(token ids (T,), [MASK] positions (M,)) for `fill_encoded`, or the ValueError that filling `text` would
        raise (no [MASK], too long), without running the model: several texts can all be checked before the first
        one's guesses are shown, and none is encoded twice."""
        return encode_masked(_masked_lm(self.model), self.tokenizer, text)

    def fill_encoded(self, encoded: tuple[np.ndarray, np.ndarray], top_k: int = 5) -> list[list[dict]]:
        """`self(text, top_k)` for a text already encoded: `encoded` is `self.encode(text)`."""
        _check_top_k(top_k)
        return _fill_encoded(_masked_lm(self.model), self.tokenizer, *encoded, top_k)


def _masked_lm(model):
    """The model that fills in [MASK]s: `model`, or an ELECTRA run's generator; an error for one without an MLM head."""
    from minibert.models.electra_pretraining import ElectraPretrainer
    from minibert.models.pretraining import _MaskedLMBase
    if isinstance(model, ElectraPretrainer):  # an ELECTRA run's model: its generator fills in the [MASK]s
        model = model.generator
    if not isinstance(model, _MaskedLMBase):  # (every model with a masked-LM head: BERT's, DistilBERT's, ELECTRA's)
        raise ValueError(f"{type(model).__name__} has no masked-LM head; fill_mask needs a BertForMaskedLM, "
                         f"BertForPreTraining or another model with one")
    return model


def encode_masked(model, tokenizer, text: str) -> tuple[np.ndarray, np.ndarray]:
    """(token ids (T,), positions of the mask token (M,)); a ValueError if there is none or the text is too long."""
    from minibert._plural import counted
    mask = tokenizer.mask_token
    ids = np.asarray(tokenizer.encode(text).input_ids, dtype=np.int64)  # (T,)
    max_len = model.config.max_tokens
    if len(ids) > max_len:
        raise ValueError(f"the text has {counted(len(ids), 'token')}, more than the model's {max_len} positions")
    positions = np.flatnonzero(ids == tokenizer.mask_token_id)  # (M,)
    if len(positions) == 0:
        other_case = re.search(re.escape(mask), text, re.IGNORECASE)
        hint = (f" ({other_case.group()!r} is not it: the mask token is {mask}, written exactly so; another spelling "
                f"is read as ordinary words)" if other_case else "")
        raise ValueError(f"no {mask} in the text{hint}: write {mask} where a word should be guessed, e.g. "
                         f"\"the cat sat on the {mask}.\"")
    return ids, positions


def fill_mask(model, tokenizer, text: str, top_k: int = 5) -> list[list[dict]]:
    """For each [MASK] in `text`, the `top_k` most likely tokens: {"token_str", "score", "token", "sequence"}."""
    _check_top_k(top_k)
    from minibert.embeddings import check_model_and_tokenizer
    check_model_and_tokenizer("fill_mask(model, tokenizer, text)", model, tokenizer)
    model = _masked_lm(model)
    return _fill_encoded(model, tokenizer, *encode_masked(model, tokenizer, text), top_k)


def _check_top_k(top_k) -> None:
    if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k < 1:
        raise ValueError(f"top_k must be an integer of at least 1, got {top_k!r}")


def _fill_encoded(model, tokenizer, ids: np.ndarray, positions: np.ndarray, top_k: int) -> list[list[dict]]:
    """fill_mask's answer for a text encode_masked encoded: `model` is the masked LM itself (_masked_lm)."""
    # Labels at the [MASK] positions make the model run its decoder only there: logits (M, V).
    labels = np.full((1, len(ids)), IGNORE_INDEX, dtype=np.int64)
    labels[0, positions] = ids[positions]
    with forward_only(model):  # eval mode, no activations kept; the caller's mode is back afterwards, error or not
        out = model.forward(ids[None, :], token_type_ids=np.zeros((1, len(ids)), dtype=np.int64), labels=labels)
    logits = out.prediction_logits.astype(np.float64)  # (M, V)
    probs = softmax_forward(logits)  # (M, V), in place on the float64 copy
    # Only the tokenizer's ordinary tokens can be guessed: not [PAD], [CLS], [SEP], [MASK], [UNK], nor ids of a model
    # whose vocabulary is larger than its tokenizer's (no text for them).
    probs[:, sorted(set(tokenizer.all_special_ids))] = -1.0
    probs[:, tokenizer.vocab_size:] = -1.0
    top_k = min(top_k, int((probs[0] >= 0).sum()))  # (never a guess that cannot be made)

    hidden = (tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id)  # other [MASK]s stay visible
    results = []
    for row, position in enumerate(positions):
        best = np.argsort(-probs[row], kind="stable")[:top_k]
        guesses = []
        for token_id in best.tolist():
            filled = ids.copy()
            filled[position] = token_id
            shown = [t for t in filled.tolist() if t not in hidden]
            guesses.append({"token_str": tokenizer.decode([token_id], skip_special_tokens=False),
                            "score": float(probs[row, token_id]), "token": int(token_id),
                            "sequence": tokenizer.decode(shown, skip_special_tokens=False)})
        results.append(guesses)
    return results


def _has_mlm_head(folder: Path) -> bool:
    from minibert.io.checkpoint import TensorSource
    return any(name.startswith(("cls.predictions.", "lm_head.", "predictions.", "generator_lm_head.",
                                "vocab_transform.")) or ".predictions." in name
               for name in TensorSource(folder).names())


def _has_pair_head(folder: Path) -> bool:
    from minibert.io.checkpoint import TensorSource
    return any(name.startswith("cls.seq_relationship.") for name in TensorSource(folder).names())
