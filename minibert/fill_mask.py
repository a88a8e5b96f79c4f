"""Fill in [MASK] tokens with a masked-language model: what pre-training teaches, made visible.

    from minibert.fill_mask import FillMask
    fill = FillMask.from_pretrained("runs/mini-wiki-20250101-120000")   # a run folder or a model folder
    fill("paris is the capital of [MASK].", top_k=5)
    # [[{"token_str": "france", "score": 0.61, "token": 1234, "sequence": "paris is the capital of france."},
    #   ...]]                                     one list per [MASK], best first (as Hugging Face's pipeline)
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from minibert.layers.attention import softmax_forward
from minibert.layers.loss import IGNORE_INDEX


class FillMask:
    def __init__(self, model, tokenizer):
        from minibert.embeddings import check_model_and_tokenizer
        check_model_and_tokenizer("FillMask(model, tokenizer)", model, tokenizer)
        if tokenizer.mask_token_id is None:
            raise ValueError("the tokenizer has no [MASK] token")
        self.model, self.tokenizer = model.eval(), tokenizer

    @classmethod
    def from_pretrained(cls, path: str | Path) -> "FillMask":
        """Load a model folder (config.json, model.safetensors, vocab.txt) or a run folder's latest checkpoint."""
        from minibert.models import BertForMaskedLM, BertForPreTraining
        from minibert.tokenizer import WordPieceTokenizer
        from minibert.training.run_dir import resolve_model_dir
        folder = resolve_model_dir(path)
        tokenizer_folder = folder
        if not _has_mlm_head(folder) and (folder / "generator" / "config.json").is_file():
            folder = folder / "generator"  # ELECTRA: the discriminator has no MLM head, its generator has one
        if not _has_mlm_head(folder):
            raise ValueError(f"{folder}: the checkpoint has no masked-LM head (cls.predictions.*), so it cannot "
                             f"fill in [MASK]s; use a model pre-trained with masked language modelling")
        architectures = json.loads((folder / "config.json").read_text(encoding="utf-8")).get("architectures") or []
        # minibert's pre-training checkpoints keep the sentence head (RoBERTa's too, saved as ...ForMaskedLM)
        with_pair_head = any(a.endswith("ForPreTraining") for a in architectures) or _has_pair_head(folder)
        model_class = BertForPreTraining if with_pair_head else BertForMaskedLM
        if "ElectraForMaskedLM" in architectures:
            from minibert.models.electra import ElectraForMaskedLM as model_class
        if "DistilBertForMaskedLM" in architectures:
            from minibert.models.distilbert import DistilBertForMaskedLM as model_class
        return cls(model_class.from_pretrained(folder), WordPieceTokenizer.from_pretrained(tokenizer_folder))

    def __call__(self, text: str, top_k: int = 5) -> list[list[dict]]:
        return fill_mask(self.model, self.tokenizer, text, top_k)


def fill_mask(model, tokenizer, text: str, top_k: int = 5) -> list[list[dict]]:
    """For each [MASK] in `text`, the `top_k` most likely tokens: {"token_str", "score", "token", "sequence"}."""
    if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k < 1:
        raise ValueError(f"top_k must be an integer of at least 1, got {top_k!r}")
    from minibert.embeddings import check_model_and_tokenizer
    from minibert.models.electra_pretraining import ElectraPretrainer
    from minibert.models.pretraining import _MaskedLMBase
    check_model_and_tokenizer("fill_mask(model, tokenizer, text)", model, tokenizer)
    if isinstance(model, ElectraPretrainer):  # an ELECTRA run's model: its generator fills in the [MASK]s
        model = model.generator
    if not isinstance(model, _MaskedLMBase):  # (every model with a masked-LM head: BERT's, DistilBERT's, ELECTRA's)
        raise ValueError(f"{type(model).__name__} has no masked-LM head; fill_mask needs a BertForMaskedLM, "
                         f"BertForPreTraining or another model with one")
    mask_id = tokenizer.mask_token_id
    max_len = model.config.max_tokens
    ids = np.asarray(tokenizer.encode(text).input_ids, dtype=np.int64)  # (T,)
    if len(ids) > max_len:
        raise ValueError(f"the text has {len(ids)} tokens, more than the model's {max_len} positions")
    positions = np.flatnonzero(ids == mask_id)  # (M,)
    if len(positions) == 0:
        raise ValueError(f"no {tokenizer.mask_token} in the text: write {tokenizer.mask_token} where a word should "
                         f"be guessed, e.g. \"the cat sat on the {tokenizer.mask_token}.\"")
    # Labels at the [MASK] positions make the model run its decoder only there: logits (M, V).
    labels = np.full((1, len(ids)), IGNORE_INDEX, dtype=np.int64)
    labels[0, positions] = ids[positions]
    was_training = model.training
    model.eval()
    out = model.forward(ids[None, :], np.zeros((1, len(ids)), dtype=np.int64), None, labels=labels)
    model.train(was_training)
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
