"""What every minibert model shares: parameters and gradients keyed by Hugging Face names, train/eval mode,
a seeded dropout generator, and loading/saving Hugging Face checkpoint folders."""

from __future__ import annotations

import contextlib

import numpy as np

from minibert.config import BertConfig
from minibert.flat import FlatArrays
from minibert.io import checkpoint
from minibert.models.init import init_param
from minibert.optim import default_no_decay
from minibert.param_shapes import check_dtype as _check_dtype


def check_config_type(config, expected: type) -> None:
    """A one-line ValueError unless `config` is a minibert `expected` (BertConfig, DistilBertConfig), saying how
    to make one of what was given (a transformers config, a dict)."""
    if not isinstance(config, expected):
        raise ValueError(f"config must be a minibert {expected.__name__}, got {_config_kind(config)}"
                         f"{_conversion_hint(config, expected.__name__)}")


def _config_kind(config) -> str:
    """"a transformers BertConfig", "dict", ...: what a model was given instead of a minibert config."""
    name = type(config).__name__
    return f"a transformers {name}" if type(config).__module__.startswith("transformers") else name


def _conversion_hint(config, ours: str) -> str:
    """How to make the minibert config `ours` ("BertConfig", "DistilBertConfig") of what was given."""
    if type(config).__module__.startswith("transformers"):
        return f"; convert it with minibert's {ours}.from_dict(hf_config.to_dict())"
    if isinstance(config, dict):
        return f"; make one of a config.json's dict with {ours}.from_dict(d)"
    if ours == "DistilBertConfig" and isinstance(config, BertConfig):
        return "; DistilBertConfig.from_bert(config) makes one with a BERT config's sizes"
    return ""


def check_seed(seed):
    """The model's seed as a Python int: a non-negative integer (NumPy's too), never None (no fresh entropy: a
    model is reproducible from its seed)."""
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    return int(seed)


def check_grad(name, value, shape, hint=""):
    """`value`, an upstream gradient given to a backward(), as an array; a ValueError naming it unless it has
    exactly `shape`, that of the forward output it is the gradient of (NumPy would broadcast a (V,) array over
    every row), and a real dtype. Shape and dtype comparisons only: no pass over the array."""
    value = np.asarray(value)
    if value.shape != shape:
        raise ValueError(f"{name} has shape {value.shape}, expected {shape}{hint}")
    if value.dtype.kind not in "fiu":
        raise ValueError(f"{name} must be a real-valued array, got dtype {value.dtype}")
    return value


def needs_forward(what="a forward()"):
    """The error of a backward() without the forward() it needs: each backward() frees its forward's caches."""
    return ValueError(f"backward() needs {what} first: call forward() again before each backward() (backward() "
                      f"frees the forward's caches)")


class Model:
    # The name prefix of the BERT body's parameters: "bert." in task models, "" in a bare BertModel.
    # Subclasses also define param_shapes(): every parameter's Hugging Face name and shape.
    base_prefix = ""
    sub_models = ()  # attributes holding models inside this one (ELECTRA's generator and discriminator)
    _sparse_last_layer = True  # see the sparse_last_layer property

    def __init__(self, config: BertConfig, seed: int = 0, dtype=np.float32, init_weights: bool = True):
        """init_weights=False leaves every parameter at zero, for a caller that overwrites them all at once
        (loading a checkpoint): drawing the random init of a real vocabulary takes a second or more."""
        check_config_type(config, BertConfig)
        config.validate()  # fields may have been changed since the config was made
        self.config = config
        self.dtype = _check_dtype(dtype)
        self.training = True
        self.recompute = False  # True: keep each layer's input only, run its forward again in the backward
        self.seed = seed = check_seed(seed)
        self.rng = np.random.default_rng([seed, 1])  # dropout masks; separate from the init stream
        # Parameters in Hugging Face's order (the order of the state dict), initialised as BERT does. They and
        # their gradients are views into one flat buffer each (minibert.flat), so that clipping and AdamW run as
        # a few large operations; the arrays AdamW does not decay form one segment at the end of the buffer.
        shapes = self.param_shapes()
        order = sorted(shapes, key=default_no_decay)  # stable: decayed first, then biases and LayerNorm
        self.params: FlatArrays = FlatArrays(shapes, self.dtype, order=order)
        if init_weights:
            self.init_weights()
        self.grads: FlatArrays = self.params.zeros_like()

    # ---------------------------------------------------------------- to override
    def param_shapes(self) -> dict[str, tuple[int, ...]]:
        """Every parameter's Hugging Face name -> its shape, in the state dict's order, as the config implies
        them (what `params` holds and what save_pretrained checks before writing)."""
        raise NotImplementedError

    def bert_view(self, arrays):
        """`params` or `grads` as the shared BERT layers read them: by BERT's names. DistilBERT models keep their
        arrays under DistilBERT's names and return a renaming view here (models/distilbert.py)."""
        return arrays

    def init_weights(self, names=None):
        """Draw the parameters as BERT initialises them, from the stream of `seed`; with `names`, only those.
        Either way a parameter gets the value a freshly built model of this seed has (the whole stream is
        replayed, since each value depends on every draw before it)."""
        init_rng = np.random.default_rng(self.seed)
        for name, shape in self.param_shapes().items():
            value = init_param(name, shape, init_rng, self.config, self.dtype)
            if names is None or name in names:
                self.params[name][...] = value

    # ---------------------------------------------------------------- modes and gradients
    def train(self, mode: bool = True):
        """Training mode (dropout on) with mode=True, eval mode with False; returns the model, as torch does."""
        self.training = mode
        return self

    def eval(self):
        """Eval mode: dropout off (inference, evaluation). Same as train(False); returns the model."""
        return self.train(False)

    def set_recompute(self, on: bool = True):
        """Activation recompute (models/bert.py): each encoder layer keeps only its input in the forward and runs
        again in the backward. Same gradients, bit for bit; much less memory; one more forward per step."""
        self.recompute = bool(on)
        for name in self.sub_models:
            getattr(self, name).set_recompute(on)
        return self

    @property
    def sparse_last_layer(self) -> bool:
        """A model whose loss reads the last hidden state at a few positions only (masked-LM training: the masked
        positions; sequence classification: [CLS]) runs its last encoder layer, after the attention, at those
        rows only (models/bert.py): the same loss and gradients (with dropout on, the same in distribution: that
        layer draws fewer dropout numbers), fewer FLOPs. Set it to False to run the layer everywhere (a model
        made of others, ELECTRA's pre-trainer, passes it on to them)."""
        return self._sparse_last_layer

    @sparse_last_layer.setter
    def sparse_last_layer(self, on: bool):
        self._sparse_last_layer = bool(on)
        for name in self.sub_models:
            getattr(self, name).sparse_last_layer = on

    def zero_grad(self):
        """Set every gradient to 0. backward() ADDS into `grads` (+=), so call this before each step's backward
        (or after the optimizer step); skipping it accumulates gradients over several backwards."""
        if self.grads.intact():
            self.grads.buffer.fill(0.0)
        else:
            for g in self.grads.values():
                g.fill(0.0)

    def num_parameters(self) -> int:
        """The number of learned numbers (the tied MLM decoder counts once, as the word embeddings)."""
        return sum(p.size for p in self.params.values())

    def astype(self, dtype):
        """Cast parameters (and gradients) to float32 or float64; returns self.

        The arrays are replaced (new buffers; the dicts stay the same objects), so an optimizer made before must
        be made again."""
        self.dtype = _check_dtype(dtype)
        self.params.cast(self.dtype)
        self.grads.cast(self.dtype)
        self.grads.buffer.fill(0.0)
        return self

    # ---------------------------------------------------------------- checkpoints
    @classmethod
    def from_pretrained(cls, path, dtype=np.float32, **kwargs):
        """Load a Hugging Face BERT checkpoint folder (config.json + model.safetensors)."""
        return checkpoint.load_pretrained(cls, path, dtype=dtype, **kwargs)

    def save_pretrained(self, path):
        """Write config.json and model.safetensors that transformers loads into the matching class."""
        checkpoint.save_pretrained(self, path)


@contextlib.contextmanager
def forward_only(model):
    """Eval mode and recompute on for forwards that no backward follows: the layers keep only their inputs, not
    their activations (the numbers are the same; one evaluation batch needs only one layer's activations at a
    time, below a training step's; with several batches at once, minibert/parallel.py, each needs its own).
    The model's mode and recompute setting are restored afterwards, also when an exception is raised."""
    was_training, was_recompute = model.training, getattr(model, "recompute", None)
    can_recompute = hasattr(model, "set_recompute")  # (a stand-in model in a test may have no encoder)
    model.eval()
    if can_recompute:
        model.set_recompute(True)
    try:
        yield model
    finally:
        model.train(was_training)
        if can_recompute:
            model.set_recompute(was_recompute)
