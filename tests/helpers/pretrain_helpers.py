"""Small, learnable corpora and fast settings for the pre-training tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np

ANIMALS = ["fox", "cat", "dog", "owl", "bear", "wolf", "frog", "duck", "goat", "horse", "mouse", "seal",
           "crow", "deer", "hare", "lion"]
COLORS = ["red", "black", "brown", "white", "grey", "green", "blue", "yellow"]
FOODS = ["apples", "fish", "berries", "seeds", "grass", "insects", "nuts", "corn"]
PLACES = ["forest", "river", "desert", "mountain", "meadow", "swamp", "city", "farm"]


def synthetic_documents(n_docs: int = 300, seed: int = 0) -> list[list[str]]:
    """Documents of 2-6 sentences about animals whose colour, food and home never change, so a model that
    learns the facts can fill them in (and a model that learns nothing cannot)."""
    rng = np.random.default_rng(seed)
    facts = {a: (COLORS[i % 8], FOODS[(i * 3) % 8], PLACES[(i * 5) % 8]) for i, a in enumerate(ANIMALS)}
    templates = ["the {color} {animal} eats {food} .", "the {animal} lives in the {place} .",
                 "every {animal} is {color} .", "a {animal} likes {food} and the {place} ."]
    docs = []
    for _ in range(n_docs):
        animal = ANIMALS[rng.integers(len(ANIMALS))]
        color, food, place = facts[animal]
        docs.append([templates[rng.integers(len(templates))].format(animal=animal, color=color, food=food,
                                                                     place=place)
                     for _ in range(rng.integers(2, 7))])
    return docs


def write_corpus(path: Path, documents: list[list[str]]) -> Path:
    """google-research/bert's format: one sentence per line, a blank line between documents."""
    path.write_text("\n\n".join("\n".join(doc) for doc in documents) + "\n", encoding="utf-8")
    return path


def tiny_settings(corpus: Path, runs_dir: Path, **overrides):
    from minibert.training.settings import PretrainSettings
    values = dict(corpus=[str(corpus)], vocab_size=120, config="tiny", seq_len=32, batch_size=16, steps=30,
                  lr=2e-3, warmup=0.1, eval_examples=64, eval_fraction=0.05, runs_dir=str(runs_dir), name="run",
                  quiet=True, plot=False, log_every=1)
    values.update(overrides)
    return PretrainSettings(**values)


def interrupt_in_step(monkeypatch, step: int):
    """Make the training loop raise KeyboardInterrupt (Ctrl-C) during optimizer step `step` (1-based), after
    that step's backward: the clipping call of the step raises. Returns a function that undoes it."""
    import minibert.training.pretrain as pretrain_module
    real_clip, calls = pretrain_module.clip_grad_norm, {"n": 0}

    def clip_or_interrupt(grads, max_norm):
        calls["n"] += 1
        if calls["n"] == step:
            raise KeyboardInterrupt
        return real_clip(grads, max_norm)

    monkeypatch.setattr(pretrain_module, "clip_grad_norm", clip_or_interrupt)
    return lambda: monkeypatch.setattr(pretrain_module, "clip_grad_norm", real_clip)
