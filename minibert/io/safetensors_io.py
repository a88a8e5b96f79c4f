"""Reading and writing safetensors files, with our own check of the header first.

A safetensors file is simple enough to check by hand:

    8 bytes        N, the header length, unsigned little-endian
    N bytes        a JSON object: {"__metadata__": {str: str}, "<tensor name>": {"dtype": "F32",
                   "shape": [rows, cols], "data_offsets": [begin, end]}, ...}
    the rest       the tensors' bytes, back to back; offsets count from the end of the header

We check every promise the header makes (lengths, dtypes, shapes, offsets) against the file's real size
before the `safetensors` package reads it, so a truncated or corrupt file gives one clear line naming the
file and the tensor, instead of a Rust panic or a silently short array.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np

from minibert.io.atomic import atomic_path

# safetensors dtype -> bytes per element
DTYPE_SIZES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "I16": 2, "U16": 2, "F16": 2, "BF16": 2,
               "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8}
# the dtypes we can turn into NumPy arrays (BF16 by hand: NumPy has no bfloat16)
NUMPY_DTYPES = {"BOOL": np.bool_, "U8": np.uint8, "I8": np.int8, "I16": np.int16, "U16": np.uint16,
                "F16": np.float16, "I32": np.int32, "U32": np.uint32, "F32": np.float32, "I64": np.int64,
                "U64": np.uint64, "F64": np.float64}
MAX_HEADER_BYTES = 100_000_000  # the limit the safetensors library itself enforces


def read_safetensors_header(path: str | os.PathLike) -> dict[str, dict]:
    """Validate `path`'s header against the file size; return {name: {"dtype", "shape", "data_offsets"}}.

    The "__metadata__" entry, if any, is returned under that key. Raises a one-line ValueError naming the file
    (and the tensor) on any inconsistency.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    file_size = path.stat().st_size
    if file_size < 8:
        raise ValueError(f"{path}: not a safetensors file: {file_size} bytes, shorter than the 8-byte header "
                         f"length (truncated?)")
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        if n > MAX_HEADER_BYTES or 8 + n > file_size:
            raise ValueError(f"{path}: header length field says {n:,} bytes but the file has only "
                             f"{file_size - 8:,} bytes after it (truncated, or not a safetensors file)")
        raw = f.read(n)
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: header is not valid JSON ({e}); not a safetensors file?") from None
    if not isinstance(header, dict):
        raise ValueError(f"{path}: header must be a JSON object, got {type(header).__name__}")
    metadata = header.get("__metadata__")
    if metadata is not None and not (isinstance(metadata, dict) and
                                     all(isinstance(v, str) for v in metadata.values())):
        raise ValueError(f"{path}: __metadata__ must map strings to strings")

    data_size = file_size - 8 - n
    spans = []  # (begin, end, name)
    for name, info in header.items():
        if name == "__metadata__":
            continue
        where = f"{path}: tensor {name!r}"
        if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"}:
            raise ValueError(f"{where}: header entry must have exactly dtype, shape and data_offsets, got "
                             f"{info!r}"[:300])
        dtype, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
        if dtype not in DTYPE_SIZES:
            raise ValueError(f"{where}: unknown dtype {dtype!r}; expected one of {', '.join(DTYPE_SIZES)}")
        if not (isinstance(shape, list) and all(_is_count(d) for d in shape)):
            raise ValueError(f"{where}: shape must be a list of non-negative integers, got {shape!r}")
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(_is_count(o) for o in offsets)
                and offsets[0] <= offsets[1]):
            raise ValueError(f"{where}: data_offsets must be [begin, end] with 0 <= begin <= end, got {offsets!r}")
        begin, end = offsets
        expected = math.prod(shape) * DTYPE_SIZES[dtype]
        if end - begin != expected:
            raise ValueError(f"{where}: header says {dtype} {tuple(shape)} = {expected:,} bytes but its "
                             f"data_offsets span {end - begin:,} bytes (corrupt header)")
        if end > data_size:
            raise ValueError(f"{where}: data ends at byte {end:,} but the file holds only {data_size:,} bytes of "
                             f"tensor data (truncated file)")
        spans.append((begin, end, name))
    # The tensors must tile the data area exactly: no gaps, no overlaps (the safetensors rule).
    position = 0
    for begin, end, name in sorted(spans):
        if begin != position:
            what = "overlaps the previous tensor" if begin < position else f"leaves a gap at byte {position:,}"
            raise ValueError(f"{path}: tensor {name!r} starts at byte {begin:,} and {what} (corrupt header)")
        position = end
    if position != data_size:
        raise ValueError(f"{path}: the tensors cover {position:,} bytes but the file holds {data_size:,} bytes of "
                         f"tensor data (extra bytes at the end; corrupt file)")
    return header


def _is_count(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def load_safetensors(path: str | os.PathLike, header: dict | None = None) -> dict[str, np.ndarray]:
    """Read every tensor of a (validated) safetensors file as NumPy arrays; BF16 comes back as float32."""
    from safetensors import safe_open

    path = Path(path)
    header = read_safetensors_header(path) if header is None else header
    tensors = {}
    bf16 = [name for name, info in header.items() if name != "__metadata__" and info["dtype"] == "BF16"]
    unreadable = [name for name, info in header.items()
                  if name != "__metadata__" and info["dtype"] not in NUMPY_DTYPES and info["dtype"] != "BF16"]
    if unreadable:
        raise ValueError(f"{path}: tensor {unreadable[0]!r} has dtype {header[unreadable[0]]['dtype']}, which "
                         f"NumPy cannot hold; convert the checkpoint to float32")
    with safe_open(str(path), framework="numpy") as f:
        for name in f.keys():
            if name not in bf16:
                tensors[name] = f.get_tensor(name)
    if bf16:
        data_start = 8 + int.from_bytes(_first8(path), "little")  # tensor data begins after the header
        for name in bf16:
            begin, end = header[name]["data_offsets"]
            raw = np.fromfile(path, dtype="<u2", count=(end - begin) // 2, offset=data_start + begin)
            # bfloat16 is the top half of a float32: shift the 16 bits into place.
            tensors[name] = (raw.astype(np.uint32) << 16).view(np.float32).reshape(header[name]["shape"])
    return tensors


def _first8(path: Path) -> bytes:
    with open(path, "rb") as f:
        return f.read(8)


def save_safetensors(tensors: dict[str, np.ndarray], path: str | os.PathLike,
                     metadata: dict[str, str] | None = None) -> None:
    """Write `tensors` to `path` atomically, every array made C-contiguous first.

    safetensors 0.8.0 writes the raw memory of a NumPy array in storage order, so a transposed (non-contiguous)
    array would be saved with its values scrambled, without any error
    (https://github.com/huggingface/safetensors/issues/825). Copying into C order is what makes the file right.
    """
    from safetensors.numpy import save_file

    contiguous = {}
    for name, array in tensors.items():
        array = np.asarray(array)
        if array.dtype.byteorder == ">":  # safetensors is little-endian on disk
            array = array.astype(array.dtype.newbyteorder("<"))
        contiguous[name] = np.ascontiguousarray(array)
    with atomic_path(path) as tmp:
        save_file(contiguous, str(tmp), metadata=metadata)
