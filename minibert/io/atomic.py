"""Atomic file writes: write to a temporary file in the same folder, then rename it into place.

A crash (or Ctrl-C) half-way through writing leaves the old file untouched instead of a truncated one,
because `os.replace` within one folder is atomic on POSIX and Windows. The temporary file lives in the
*same* folder so the rename never crosses a file system.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path next to `path`; on success rename it to `path`, on error delete it.

        with atomic_path("model.safetensors") as tmp:
            save_file(tensors, tmp)
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # A fresh name that nobody else uses; not created here, so the writer makes it with normal permissions.
    tmp = path.parent / f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write `data` to `path` atomically."""
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())


def atomic_write_text(path: str | os.PathLike, text: str, encoding: str = "utf-8") -> None:
    """Write `text` to `path` atomically (UTF-8, newlines written as given)."""
    atomic_write_bytes(path, text.encode(encoding))
