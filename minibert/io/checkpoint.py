"""Load and save Hugging Face BERT checkpoint folders.

A checkpoint folder holds `config.json` (the hyper-parameters, Hugging Face's field names) and
`model.safetensors` (every weight, keyed by Hugging Face's state-dict names). minibert's models keep their
parameters under exactly those names, so loading is a walk over names:

    file key  --(rename LayerNorm gamma/beta, add or strip "bert.")-->  model.params key  --copy-->  array

The `bert.` prefix: task models (BertForPreTraining, BertForMaskedLM, classifiers) keep the encoder under
"bert.", a bare BertModel keeps it at the top level. A BertModel-only checkpoint (MiniLM) therefore loads into
a task model (its heads are initialised and listed in a warning), and a pre-training checkpoint loads into a
BertModel (its heads are listed as unused).

Tied weights: BERT's MLM decoder *is* the word-embedding matrix. minibert has no separate decoder parameter, and
transformers 5 writes no `cls.predictions.decoder.weight` either (it re-ties on load), so we do not save one. When
a file does carry the key (older transformers), we check it equals the embeddings.
"""

from __future__ import annotations

import inspect
import json
import warnings
from pathlib import Path

import numpy as np

from minibert.config import BertConfig
from minibert.io.atomic import atomic_write_text
from minibert.io.families import architecture, from_hf_name, to_hf_name
from minibert.io.safetensors_io import load_safetensors, read_safetensors_header, save_safetensors
from minibert.param_shapes import bert_param_shapes, check_dtype

CONFIG_NAME = "config.json"
WEIGHTS_NAME = "model.safetensors"
WEIGHTS_INDEX_NAME = "model.safetensors.index.json"  # sharded checkpoints
TORCH_WEIGHTS_NAME = "pytorch_model.bin"
DECODER_WEIGHT = "cls.predictions.decoder.weight"
DECODER_BIAS = "cls.predictions.decoder.bias"
MLM_BIAS = "cls.predictions.bias"
# Non-parameter buffers some checkpoints carry; they hold nothing to learn.
BUFFER_SUFFIXES = ("embeddings.position_ids", "embeddings.token_type_ids")
FLOAT_DTYPES = ("F16", "BF16", "F32", "F64")


class CheckpointWarning(UserWarning):
    """Missing or unexpected tensors, or an untied decoder: the model loaded, but not everything matched."""


# ---------------------------------------------------------------------------------------------------- loading
def load_pretrained(cls, path, dtype=np.float32, **kwargs):
    """Build `cls(config, dtype=dtype, **kwargs)` from a checkpoint folder (or a run folder: its latest
    checkpoint) and copy its weights in.

    `path` is whatever the CLI's --model takes (minibert.io.model_folder.resolve_model_folder): a checkpoint
    folder, a run folder or its checkpoints/ (the latest complete checkpoint), or "minilm" (the built-in
    all-MiniLM-L6-v2). Returns the model in eval mode with `model.name_or_path` set. Raises a one-line ValueError
    naming the file and tensor when a tensor's shape or dtype disagrees with config.json, before any weights are
    read.
    """
    from minibert.io.model_folder import resolve_model_folder
    dtype = check_dtype(dtype)  # before anything is read
    folder = resolve_model_folder(path, option=None)
    config = BertConfig.from_json_file(folder / CONFIG_NAME)
    # BERT's classes load every family that keeps BERT's names (roberta, albert, electra bodies: io/families.py);
    # DistilBERT's and DeBERTa's names differ, so their classes and their checkpoints go together only.
    model_type, wanted = config.model_type, getattr(cls, "model_type", "bert")
    for own_names in ("distilbert", "deberta-v2"):
        if (model_type == own_names) != (wanted == own_names):
            raise ValueError(f"{folder / CONFIG_NAME}: model_type is {model_type!r}, but {cls.__name__} loads "
                             f"{wanted!r} checkpoints (minibert.models.auto picks the class from config.json)")
    kwargs = _kwargs_from_config(cls, config, kwargs)
    source = TensorSource(folder)  # validates the safetensors headers: shapes are known before any data is read
    # The encoder's shapes follow from config.json alone: check them before building the model, so a wrong
    # file fails before any large allocation.
    family = getattr(cls, "family_prefix", "bert.")
    expected = (cls.expected_shapes(config) if hasattr(cls, "expected_shapes")
                else bert_param_shapes(config, cls.base_prefix, project_name=getattr(cls, "project_name", None)))
    _check_shapes(source, expected, cls.base_prefix, config, folder, family)

    model = cls(config, dtype=dtype, init_weights=False, **kwargs)  # zeros: the checkpoint overwrites them
    mapping, unexpected = _check_shapes(source, {k: p.shape for k, p in model.params.items()}, model.base_prefix,
                                        config, folder, family)
    if not mapping:
        raise ValueError(f"{source.label}: none of its {len(source.names())} tensors is a {cls.__name__} parameter "
                         f"(first: {source.names()[:3]}); is it a BERT checkpoint?")

    tensors = source.read()
    for file_key, param_key in mapping.items():
        np.copyto(model.params[param_key], tensors[file_key], casting="unsafe")  # in place, C order, model dtype
    loaded = set(mapping.values())
    unexpected = _handle_tied_keys(model, tensors, unexpected, loaded, source.label, config.model_type)

    missing = [k for k in model.params if k not in loaded]
    if missing:
        model.init_weights(missing)  # as a fresh model of this seed would have them
        warnings.warn(f"{source.label}: {len(missing)} weights of {cls.__name__} are not in the checkpoint and were "
                      f"newly initialised (train them before use): {_short_list(missing)}",
                      CheckpointWarning, stacklevel=3)
    if unexpected:
        warnings.warn(f"{source.label}: {len(unexpected)} tensors are not used by {cls.__name__} and were ignored: "
                      f"{_short_list(unexpected)}", CheckpointWarning, stacklevel=3)
    model.name_or_path = str(folder)
    model.eval()
    return model


def _kwargs_from_config(cls, config, kwargs):
    """Pass num_labels from config.json's id2label to a classifier's constructor, unless given."""
    accepted = inspect.signature(cls.__init__).parameters
    id2label = config.extra.get("id2label")
    if "num_labels" in accepted and "num_labels" not in kwargs and isinstance(id2label, dict) and id2label:
        kwargs = dict(kwargs, num_labels=len(id2label))
    return kwargs


def map_keys(file_keys, param_keys, base_prefix, model_type="bert", family="bert."):
    """Match checkpoint names to parameter names. Returns ({file_key: param_key}, [unexpected file keys]).
    `family` is the body's prefix in task models ("bert.", "distilbert."): stripped for a bare model.

    Buffers (position_ids) are dropped silently; the decoder keys are left for `_handle_tied_keys`. A family's
    own names (roberta., albert., lm_head. ...) are first renamed to minibert's (io/families.py).
    """
    params = set(param_keys)
    mapping, unexpected = {}, []
    for key in file_keys:
        if key.endswith(BUFFER_SUFFIXES):
            continue
        name = from_hf_name(_modern_name(key), model_type)
        candidates = [name]
        if base_prefix and not name.startswith(base_prefix):
            candidates.append(base_prefix + name)  # BertModel-only file into a task model
        if not base_prefix and name.startswith(family):
            candidates.append(name[len(family):])  # task-model file into a bare model
        if base_prefix != "electra." and name.startswith("electra."):
            # an ELECTRA discriminator's body is a BERT body (when its embeddings need no projection): fine-tuning
            # and embedding use it
            candidates.append(base_prefix + name[len("electra."):])
        match = next((c for c in candidates if c in params), None)
        if match is None:
            unexpected.append(key)
        elif match in mapping.values():
            raise ValueError(f"two tensors of the checkpoint map to parameter {match!r} (one is {key!r}); "
                             f"a file should have the {family!r} prefix on all encoder tensors or on none")
        else:
            mapping[key] = match
    return mapping, unexpected


def _modern_name(key):
    """Old TensorFlow-converted checkpoints call LayerNorm's weight/bias gamma/beta."""
    if ".LayerNorm." in key or key.startswith("LayerNorm."):
        if key.endswith(".gamma"):
            return key[: -len("gamma")] + "weight"
        if key.endswith(".beta"):
            return key[: -len("beta")] + "bias"
    return key


def _check_shapes(source, expected_shapes, base_prefix, config, folder, family="bert."):
    """Map the file's names onto `expected_shapes`' and check every shape and dtype; returns map_keys' result."""
    mapping, unexpected = map_keys(source.names(), expected_shapes, base_prefix, config.model_type, family)
    # The embedding matrix first: a vocabulary mismatch is the likeliest cause of any other shape error.
    for file_key, param_key in sorted(mapping.items(), key=lambda kv: "word_embeddings" not in kv[1]):
        _check_tensor(source, file_key, param_key, expected_shapes[param_key], config, folder)
    return mapping, unexpected


def _check_tensor(source, file_key, param_key, expected_shape, config, folder):
    shape, dtype = source.shape(file_key), source.dtype(file_key)
    where = f"{source.file_of(file_key)}: tensor {file_key!r}"
    if dtype not in FLOAT_DTYPES:
        raise ValueError(f"{where} has dtype {dtype}, expected a floating-point tensor ({', '.join(FLOAT_DTYPES)})")
    if shape == tuple(expected_shape):
        return
    if param_key.endswith("embeddings.word_embeddings.weight") and len(shape) == 2 and \
            shape[1] == expected_shape[1]:
        raise ValueError(f"{where}: the embedding matrix has {shape[0]} rows but {folder / CONFIG_NAME} says "
                         f"vocab_size={config.vocab_size}; the two must agree")
    raise ValueError(f"{where} has shape {shape} but {folder / CONFIG_NAME} (hidden_size={config.hidden_size}, "
                     f"intermediate_size={config.intermediate_size}, vocab_size={config.vocab_size}, "
                     f"max_position_embeddings={config.max_position_embeddings}) implies {tuple(expected_shape)}")


def _handle_tied_keys(model, tensors, unexpected, loaded, label, model_type="bert"):
    """Check an explicit decoder weight/bias against what minibert ties it to; return the still-unexpected keys."""
    embeddings_key = model.base_prefix + "embeddings.word_embeddings.weight"
    decoder_weight = getattr(model, "decoder_weight_key", DECODER_WEIGHT)  # DistilBERT: vocab_projector.weight
    mlm_bias = getattr(model, "mlm_bias_key", MLM_BIAS)
    if mlm_bias not in model.params:  # no MLM head (BertModel, classifiers): decoder keys are simply unused
        return unexpected
    rest = []
    for key in unexpected:
        name = from_hf_name(key, model_type)  # lm_head.decoder.weight (RoBERTa) -> cls.predictions.decoder.weight
        if name == decoder_weight:
            decoder, embeddings = tensors[key], model.params[embeddings_key]
            if decoder.shape != embeddings.shape or not np.array_equal(decoder.astype(embeddings.dtype), embeddings):
                diff = (np.abs(decoder.astype(np.float64) - embeddings).max()
                        if decoder.shape == embeddings.shape else f"shape {decoder.shape}")
                warnings.warn(f"{label}: {decoder_weight} differs from {embeddings_key} (max |diff| {diff}); minibert "
                              f"ties the MLM decoder to the word embeddings, so the file's decoder was ignored",
                              CheckpointWarning, stacklevel=4)
        elif name == DECODER_BIAS and mlm_bias == MLM_BIAS:
            bias = tensors[key]
            if MLM_BIAS not in loaded and bias.shape == model.params[MLM_BIAS].shape:
                np.copyto(model.params[MLM_BIAS], bias, casting="unsafe")  # very old files name the bias so
                loaded.add(MLM_BIAS)
            elif not np.array_equal(bias.astype(model.dtype), model.params[MLM_BIAS]):
                warnings.warn(f"{label}: {DECODER_BIAS} differs from {MLM_BIAS}; minibert uses {MLM_BIAS}",
                              CheckpointWarning, stacklevel=4)
        else:
            rest.append(key)
    return rest


def _short_list(keys, limit=8):
    shown = ", ".join(keys[:limit])
    return shown + (f", ... ({len(keys) - limit} more)" if len(keys) > limit else "")


class TensorSource:
    """The weight file(s) of a checkpoint folder: names, shapes and dtypes first (from the validated headers),
    the data only on `read()`. Understands model.safetensors, sharded safetensors with an index, and
    pytorch_model.bin (read with torch.load(weights_only=True) when torch is installed, never unpickled here)."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.files: dict[str, Path] = {}  # tensor name -> file holding it
        self.headers: dict[Path, dict] = {}
        self.arrays: dict[str, np.ndarray] | None = None  # filled at once for pytorch_model.bin
        single, index, torch_file = folder / WEIGHTS_NAME, folder / WEIGHTS_INDEX_NAME, folder / TORCH_WEIGHTS_NAME
        if single.exists():
            self._add_safetensors(single)
            self.label = str(single)
        elif index.exists():
            for shard in sorted(set(_read_index(index).values())):
                self._add_safetensors(folder / shard)
            self.label = str(index)
        elif torch_file.exists():
            self.arrays = _torch_load(torch_file)
            self.files = {name: torch_file for name in self.arrays}
            self.label = str(torch_file)
        else:
            raise FileNotFoundError(f"{folder}: no weights found (expected {WEIGHTS_NAME}, {WEIGHTS_INDEX_NAME} or "
                                    f"{TORCH_WEIGHTS_NAME})")

    def _add_safetensors(self, file: Path):
        header = read_safetensors_header(file)
        self.headers[file] = header
        for name in header:
            if name != "__metadata__":
                if name in self.files:
                    raise ValueError(f"{file}: tensor {name!r} is also in {self.files[name]}")
                self.files[name] = file

    def names(self) -> list[str]:
        return list(self.files)

    def file_of(self, name) -> Path:
        return self.files[name]

    def shape(self, name) -> tuple[int, ...]:
        if self.arrays is not None:
            return tuple(self.arrays[name].shape)
        return tuple(self.headers[self.files[name]][name]["shape"])

    def dtype(self, name) -> str:
        """The safetensors dtype name (F32, BF16, I64, ...)."""
        if self.arrays is not None:
            kind = self.arrays[name].dtype
            return {np.float16: "F16", np.float32: "F32", np.float64: "F64"}.get(kind.type, kind.name)
        return self.headers[self.files[name]][name]["dtype"]

    def read(self) -> dict[str, np.ndarray]:
        if self.arrays is not None:
            return self.arrays
        tensors = {}
        for file, header in self.headers.items():
            tensors.update(load_safetensors(file, header))
        return tensors


def _read_index(path: Path) -> dict[str, str]:
    try:
        weight_map = json.loads(path.read_text(encoding="utf-8"))["weight_map"]
    except (json.JSONDecodeError, KeyError, TypeError) as e:
        raise ValueError(f"{path}: not a valid safetensors index (expected a JSON object with 'weight_map'; {e})") \
            from None
    for shard in weight_map.values():
        if "/" in shard or "\\" in shard or shard.startswith(".") or not (path.parent / shard).is_file():
            raise ValueError(f"{path}: shard {shard!r} is not a file of the folder")
    return weight_map


def _torch_load(path: Path) -> dict[str, np.ndarray]:
    """pytorch_model.bin is a pickle. We only let torch read it in its restricted weights-only mode."""
    try:
        import torch
    except ImportError:
        raise ValueError(
            f"{path} is a PyTorch pickle, which minibert does not open itself (unpickling can run arbitrary code). "
            f"Install torch (it then reads the file with torch.load(weights_only=True)), or convert it once where "
            f"torch is installed: python -c \"import torch; from safetensors.torch import save_file; "
            f"sd = torch.load('pytorch_model.bin', weights_only=True); "
            f"save_file({{k: v.contiguous().clone() for k, v in sd.items()}}, 'model.safetensors', "
            f"metadata={{'format': 'pt'}})\"") from None
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # torch raises UnpicklingError, RuntimeError, EOFError, ... on a bad file
        raise ValueError(f"{path}: torch.load(weights_only=True) refused or failed to read it "
                         f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})") from None
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise ValueError(f"{path}: expected a state dict (tensor name -> tensor)")
    arrays = {}
    for name, t in state.items():
        t = t.detach().cpu()
        if t.dtype == torch.bfloat16:
            t = t.float()
        arrays[name] = t.numpy()
    return arrays


# ---------------------------------------------------------------------------------------------------- saving
def save_pretrained(model, path) -> Path:
    """Write `config.json` and `model.safetensors` (atomically) that transformers loads into the class of the
    same name (`architectures`) with identical outputs. Returns the folder.

    config.json's model_type and architectures always name the family whose names the tensors carry: a BERT
    class loaded from an ELECTRA folder (its body keeps BERT's names here) saves as model_type "bert", so that
    transformers' Auto classes build a BERT and find every weight. Every tensor is checked against the shape the
    config implies (and must be floating-point) before anything is written."""
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise FileExistsError(f"{folder}: exists and is not a folder")
    _check_params_before_saving(model)
    folder.mkdir(parents=True, exist_ok=True)

    config = model.config.to_dict()
    config.pop("_name_or_path", None)
    if config.get("model_type") == "electra":  # a BERT class on an ELECTRA body (the ELECTRA classes say so below)
        config["model_type"] = "bert"
        if config.get("embedding_size") == config["hidden_size"]:
            del config["embedding_size"]  # (BERT has none; E = H is why a BERT class could load it)
    config["architectures"] = [architecture(type(model).__name__, model.config.model_type)]
    # minibert always ties the decoder to the word embeddings and writes no decoder tensor: transformers must tie
    # them too, or it would initialise the decoder at random.
    config["tie_word_embeddings"] = True
    config["dtype"] = np.dtype(model.dtype).name
    config.update(getattr(model, "hf_config_fields", dict)())  # another family's model_type and fields (ELECTRA)
    num_labels = getattr(model, "num_labels", None)
    if num_labels is not None and len(config.get("id2label") or {}) != num_labels:
        config["id2label"] = {str(i): f"LABEL_{i}" for i in range(num_labels)}
        config["label2id"] = {f"LABEL_{i}": i for i in range(num_labels)}

    names = {name: to_hf_name(name, model.config.model_type, model.base_prefix, classifier=num_labels is not None)
             for name in model.params}
    save_safetensors({names[k]: v for k, v in model.params.items()}, folder / WEIGHTS_NAME, metadata={"format": "pt"})
    atomic_write_text(folder / CONFIG_NAME, json.dumps(config, indent=2, sort_keys=True) + "\n")
    return folder



def _check_params_before_saving(model):
    """A one-line ValueError naming the first parameter whose shape differs from the one the model's config
    implies (an entry replaced by `params[name] = array` of another shape: neither minibert nor transformers could
    load the file), or that is not a floating-point array."""
    expected = model.param_shapes()
    for name, value in model.params.items():
        value = np.asarray(value)
        if name not in expected:
            raise ValueError(f"cannot save: parameter {name!r} is not one of {type(model).__name__}'s (its config "
                             f"gives {len(expected)} parameters)")
        if value.shape != tuple(expected[name]):
            raise ValueError(f"cannot save: tensor {name!r} has shape {value.shape}, but the model's config implies "
                             f"{tuple(expected[name])}; nothing was written")
        if value.dtype.kind != "f":
            raise ValueError(f"cannot save: tensor {name!r} has dtype {value.dtype}, expected a floating-point array "
                             f"of shape {tuple(expected[name])}; nothing was written")
    missing = [name for name in expected if name not in model.params]
    if missing:
        raise ValueError(f"cannot save: {len(missing)} parameters of {type(model).__name__} are missing from "
                         f"model.params: {_short_list(missing)}; nothing was written")
