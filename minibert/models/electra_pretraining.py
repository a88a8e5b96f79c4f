"""ELECTRA pre-training (Clark et al. 2020): a small generator fills the masked positions, the discriminator
finds the tokens it replaced.

    generator (MLM BERT, ~1/4 of the width)   masked input -> logits at the masked positions -> MLM loss
    sample a token at each masked position from softmax(logits)      (no gradient: the sample is data)
    discriminator                             input with the samples written in -> one logit per token
    replaced = sample != original token (a correct guess counts as original), BCE over non-padding tokens
    loss = MLM(generator) + rtd_weight x RTD(discriminator), rtd_weight = 50 as in the paper

The two share their embedding tables (word, position, token type and the embeddings' LayerNorm, as the original
code's shared "electra/embeddings" scope does). One flat buffer holds every parameter: the discriminator's under
its Hugging Face names, the generator's own ones under "generator." + its names. The two sub-models get dicts of
views into it, the generator's "electra.embeddings.*" entries being the discriminator's arrays; so each backward
adds (+=) its share into the same gradient arrays, and the shared tables' gradient is the sum over both uses
with no extra code. The generator's decoder is tied to the shared word embeddings too (a third use).

Checkpoint folder: the discriminator (ElectraForPreTraining) in the folder itself, the generator
(ElectraForMaskedLM, with its copy of the shared tables) in `generator/`.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from minibert.layers.loss import IGNORE_INDEX
from minibert.models.base import Model
from minibert.models.electra import (ElectraForMaskedLM, ElectraForPreTraining, discriminator_shapes,
                                     generator_config, generator_shapes)
from minibert.models.outputs import ModelOutput

GEN = "generator."  # prefix of the generator's own parameters in the combined buffer
SHARED = "electra.embeddings."  # parameters both models use
GENERATOR_DIR = "generator"
RTD_WEIGHT = 50.0  # lambda of the paper
EVAL_SAMPLE_SEED = 4321


def sample_tokens(logits, rng):
    """One token per row of `logits` (M, V), drawn from softmax(logits) with `rng` (inverse CDF, one uniform
    number per row). Returns (M,) int64."""
    z = logits.astype(np.float64)  # (M, V)
    z -= z.max(axis=-1, keepdims=True)
    np.exp(z, out=z)
    cdf = np.cumsum(z, axis=-1)  # (M, V), unnormalised
    u = rng.random(len(z)) * cdf[:, -1]  # (M,)
    picks = (cdf < u[:, None]).sum(axis=-1)  # the first index whose cumulative mass reaches u
    return np.minimum(picks, logits.shape[-1] - 1).astype(np.int64)


class Draws:
    """Uniform numbers drawn beforehand, handed out as `rng.random(n)` would (sample_tokens' one call)."""

    def __init__(self, u):
        self.u = u

    def random(self, n):
        if n != len(self.u):
            raise ValueError(f"{len(self.u)} numbers were drawn for {n} masked positions")
        return self.u


def batch_draws(key, labels, rank: int = 0, size: int = 1) -> Draws:
    """The sampling numbers of a training batch: one uniform per masked position of the whole (B, T) batch,
    from default_rng(key), in row-major order; data-parallel rank `rank` of `size`, which holds rows rank,
    rank + size, ... (training/distributed.py: rank_share), takes those of its rows. Every rank then samples
    what one process samples at the same positions."""
    rows = np.flatnonzero(np.asarray(labels).reshape(-1) != IGNORE_INDEX) // np.shape(labels)[1]  # (M,) row of each
    u = np.random.default_rng(key).random(len(rows))  # (M,)
    return Draws(u[rows % size == rank])


def replace_masked(input_ids, labels, sampled):
    """The discriminator's input and labels: the generator's samples written at the labelled positions.

    Returns (input_ids (B, T), replaced (B, T) 0/1): 1 where the token now differs from the original text."""
    original = np.where(labels != IGNORE_INDEX, labels, input_ids)  # (B, T) the text before masking
    corrupted = original.copy()
    corrupted.reshape(-1)[np.flatnonzero(labels.reshape(-1) != IGNORE_INDEX)] = sampled
    return corrupted, (corrupted != original).astype(np.int64)


class ElectraPretrainer(Model):
    """The generator and the discriminator trained together. forward(input_ids, *, token_type_ids, attention_mask,
    labels) takes a masked batch as BertForPreTraining does (labels: the original token at masked positions,
    -100 elsewhere) and returns `.loss`, `.mlm_loss` (generator), `.rtd_loss`, `.prediction_logits` and
    `.masked_positions` (generator, sparse), `.rtd_logits` (B, T), `.rtd_labels` (B, T), `.corrupted_ids`."""

    base_prefix = "electra."
    sub_models = ("discriminator", "generator")
    mlm_bias_name = GEN + "generator_lm_head.bias"  # where the unigram output bias goes (training.pretrain)

    def __init__(self, config, gen_config=None, seed=0, dtype=np.float32, init_weights=True,
                 rtd_weight=RTD_WEIGHT):
        self.gen_config = gen_config if gen_config is not None else generator_config(config)
        for name in ("vocab_size", "max_position_embeddings", "type_vocab_size", "pad_token_id"):
            if getattr(self.gen_config, name) != getattr(config, name):
                raise ValueError(f"the generator's {name} ({getattr(self.gen_config, name)}) must equal the "
                                 f"discriminator's ({getattr(config, name)}): they share the embedding tables")
        if self.gen_config.embedding_width != config.embedding_width:
            raise ValueError(f"the generator's embedding_size ({self.gen_config.embedding_width}) must equal the "
                             f"discriminator's ({config.embedding_width}): they share the embedding tables")
        self.rtd_weight = float(rtd_weight)
        super().__init__(config, seed=seed, dtype=dtype, init_weights=init_weights)
        self.discriminator = ElectraForPreTraining(config, dtype=self.dtype, init_weights=False)
        self.generator = ElectraForMaskedLM(self.gen_config, dtype=self.dtype, init_weights=False)
        self.attach_sub_models()
        self._cache = None

    @staticmethod
    def generator_key(name):
        """The combined buffer's name for the generator's parameter `name`."""
        return name if name.startswith(SHARED) else GEN + name

    def param_shapes(self):
        shapes = discriminator_shapes(self.config)
        for name, shape in generator_shapes(self.gen_config).items():
            if name.startswith(SHARED):
                assert shapes[name] == shape, name  # checked in __init__ through the configs
            else:
                shapes[GEN + name] = shape
        return shapes

    @property
    def rng(self):
        return self._rng

    @rng.setter
    def rng(self, generator):  # the sub-models draw their dropout masks from the same stream
        self._rng = generator
        for sub in (getattr(self, "discriminator", None), getattr(self, "generator", None)):
            if sub is not None:
                sub.rng = generator

    def after_sharing(self, comm):
        """(training/pretrain.py, several ranks: the buffers moved into shared memory.)"""
        self.attach_sub_models()

    def attach_sub_models(self):
        """Point the sub-models' params/grads at views of this model's buffers (again after the buffers move:
        astype, or into shared memory for data-parallel processes, training/pretrain.py)."""
        for sub, key in ((self.discriminator, lambda n: n), (self.generator, self.generator_key)):
            names = list(sub.param_shapes())
            sub.params = {n: self.params[key(n)] for n in names}
            sub.grads = {n: self.grads[key(n)] for n in names}
            sub.rng = self.rng  # one dropout stream, saved in checkpoints for exact resume
            sub.dtype = self.dtype
            sub.training = self.training

    def train(self, mode: bool = True):
        super().train(mode)
        for sub in (getattr(self, "discriminator", None), getattr(self, "generator", None)):
            if sub is not None:
                sub.train(mode)
        return self

    def astype(self, dtype):
        super().astype(dtype)
        self.attach_sub_models()
        return self

    def forward(self, input_ids, *, token_type_ids=None, attention_mask=None, labels=None, next_sentence_label=None,
                sample_rng=None):
        """`sample_rng` draws the generator's samples (the training loop passes a step's `batch_draws`). Default: in
        training the model's own generator (self.rng, saved in checkpoints); in eval mode a fixed one, so that
        held-out numbers depend on the model only."""
        self._cache = None
        if labels is None:
            raise ValueError("ElectraPretrainer.forward needs labels (the masked positions' original tokens)")
        if next_sentence_label is not None:
            raise ValueError("ELECTRA has no next-sentence prediction; use --objective electra without NSP data")
        gen = self.generator.forward(input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask,
                                     labels=labels)
        if sample_rng is None:
            sample_rng = self.rng if self.training else np.random.default_rng(EVAL_SAMPLE_SEED)
        sampled = sample_tokens(gen.prediction_logits, sample_rng)  # (M,)
        labels = np.asarray(labels).reshape(np.shape(input_ids))
        corrupted, replaced = replace_masked(np.asarray(input_ids), labels, sampled)
        disc = self.discriminator.forward(corrupted, token_type_ids=token_type_ids, attention_mask=attention_mask,
                                          labels=replaced)
        self._cache = True
        return ModelOutput(loss=gen.loss + self.rtd_weight * disc.loss, mlm_loss=gen.loss, rtd_loss=disc.loss,
                           prediction_logits=gen.prediction_logits, masked_positions=gen.masked_positions,
                           rtd_logits=disc.logits, rtd_labels=replaced, corrupted_ids=corrupted)

    __call__ = forward

    def backward(self, loss_scale=1.0, mlm_scale=None, token_scale=None):
        """Accumulate d(loss_scale * loss)/d(param): the discriminator's share (x rtd_weight), then the
        generator's; the shared embedding gradients add up in the same arrays. Data-parallel ranks scale each
        loss by their share of what it is a mean over: mlm_scale for the generator's MLM loss (masked tokens),
        token_scale for the replaced-token detection (real tokens)."""
        if self._cache is None:
            raise ValueError("backward() needs a forward() first")
        self.discriminator.backward((loss_scale if token_scale is None else token_scale) * self.rtd_weight)
        self.generator.backward(loss_scale if mlm_scale is None else mlm_scale)
        self._cache = None

    def weighted_loss(self, out, shares: dict) -> tuple[float, float]:
        """(loss, RTD loss) of a forward's output, each part scaled by this rank's share of its terms
        (shares["masked"], shares["tokens"]): added up over the ranks, the whole batch's."""
        rtd = shares["tokens"] * out.rtd_loss
        return shares["masked"] * out.mlm_loss + self.rtd_weight * rtd, rtd

    # ---------------------------------------------------------------- checkpoints
    def save_pretrained(self, path):
        """The discriminator in `path` (ElectraForPreTraining), the generator in `path/generator`."""
        self.discriminator.save_pretrained(path)
        self.generator.save_pretrained(Path(path) / GENERATOR_DIR)

    @classmethod
    def from_pretrained(cls, path, dtype=np.float32, **kwargs):
        folder = Path(path)
        if not (folder / GENERATOR_DIR).is_dir():
            raise ValueError(f"{folder}: no {GENERATOR_DIR}/ folder; an ELECTRA pre-training checkpoint holds the "
                             f"discriminator in the folder and the generator in {GENERATOR_DIR}/")
        disc = ElectraForPreTraining.from_pretrained(folder, dtype=dtype)
        gen = ElectraForMaskedLM.from_pretrained(folder / GENERATOR_DIR, dtype=dtype)
        model = cls(disc.config, gen.config, dtype=dtype, init_weights=False, **kwargs)
        for name, value in disc.params.items():
            model.params[name][...] = value
        for name, value in gen.params.items():
            if name.startswith(SHARED):
                if not np.array_equal(value, disc.params[name]):
                    warnings.warn(f"{folder / GENERATOR_DIR}: {name} differs from the discriminator's; the two share "
                                  f"it in ELECTRA pre-training, so the discriminator's is used", stacklevel=2)
            else:
                model.params[GEN + name][...] = value
        model.name_or_path = str(folder)
        model.eval()
        return model
