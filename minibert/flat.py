"""Named arrays that are views into one flat buffer.

A model's parameters, its gradients and AdamW's moments each live in one contiguous 1-D buffer, and the named
entries (Hugging Face names and shapes) are views into it. Whole-model work (zeroing the gradients, the global
gradient norm, the AdamW update) then runs as a few large NumPy operations over the buffer instead of one small
operation per tensor: ~50 tensors in mini, each small operation costing microseconds of Python and ufunc set-up.

Entries must be written in place (`arrays[name][...] = value`). An entry replaced by another array is no longer
part of the buffer: `intact()` then says False, and whole-buffer operations fall back to per-array loops.
"""

from __future__ import annotations

import math

import numpy as np


class FlatArrays(dict):
    """name -> view into `self.buffer` (1-D). The dict keeps the order of `shapes` (Hugging Face's state-dict
    order); the buffer holds the arrays in `order` (default: the same), so a caller can put arrays that are
    treated alike (e.g. no weight decay) next to each other."""

    def __init__(self, shapes: dict[str, tuple[int, ...]], dtype, order=None):
        super().__init__()
        self.shapes = {name: tuple(shape) for name, shape in shapes.items()}
        order = list(shapes) if order is None else list(order)
        if sorted(order) != sorted(shapes):
            raise ValueError("FlatArrays: `order` must name every array exactly once")
        self.slices, start = {}, 0  # name -> slice of the buffer, in buffer order
        for name in order:
            size = math.prod(self.shapes[name])
            self.slices[name] = slice(start, start + size)
            start += size
        self._attach(np.zeros(start, dtype=dtype))

    def _attach(self, buffer: np.ndarray):
        """Make every entry a view of `buffer`."""
        self.buffer = buffer  # (total,)
        for name, shape in self.shapes.items():
            dict.__setitem__(self, name, buffer[self.slices[name]].reshape(shape))
        self._views = dict(self)  # the entries as made here, to notice replaced ones

    def intact(self) -> bool:
        """True when every entry is still the view made here (none replaced, none added or removed)."""
        return len(self) == len(self._views) and all(dict.get(self, k) is v for k, v in self._views.items())

    def same_layout(self, other) -> bool:
        return isinstance(other, FlatArrays) and self.slices == other.slices and self.shapes == other.shapes

    def zeros_like(self, dtype=None) -> FlatArrays:
        """Zeros with the same names, shapes and buffer layout."""
        return FlatArrays(self.shapes, self.buffer.dtype if dtype is None else dtype, order=self.slices)

    def clone(self) -> FlatArrays:
        """A copy with its own buffer (entries replaced by other arrays are copied as they are now)."""
        out = self.zeros_like()
        if self.intact():
            np.copyto(out.buffer, self.buffer)
        else:
            for name, a in self.items():
                out[name][...] = a
        return out

    def __deepcopy__(self, memo):
        return self.clone()  # a generic deep copy would copy the views apart from the buffer

    def cast(self, dtype):
        """Move every entry into a new buffer of `dtype` (values kept, cast); replaced entries rejoin it."""
        self._move(np.empty(self.buffer.size, dtype=dtype), casting="unsafe")

    def move_to(self, buffer: np.ndarray):
        """Make every entry a view of `buffer` (1-D, this buffer's size and dtype; e.g. shared memory), values
        copied. Views of the old buffer taken earlier no longer belong to these arrays."""
        self._check_like(buffer, "move_to")
        self._move(buffer)

    def use_buffer(self, buffer: np.ndarray):
        """Make every entry a view of `buffer`, which already holds these arrays' values (e.g. shared memory that
        another process filled): nothing is copied. Same checks as move_to."""
        self._check_like(buffer, "use_buffer")
        self._attach(buffer)

    def _check_like(self, buffer: np.ndarray, method: str):
        if buffer.shape != self.buffer.shape or buffer.dtype != self.buffer.dtype:
            raise ValueError(f"FlatArrays.{method}: expected a {self.buffer.dtype} buffer of shape "
                             f"{self.buffer.shape}, got {buffer.dtype} {buffer.shape}")

    def _move(self, buffer: np.ndarray, casting: str = "same_kind"):
        values = dict(self)
        self._attach(buffer)
        for name, a in values.items():
            np.copyto(self[name], a, casting=casting)
