"""Atomic file writes: write to a temporary file in the same folder, then rename it into place.

A crash (or Ctrl-C) half-way through writing leaves the old file untouched instead of a truncated one,
because `os.replace` within one folder is atomic on POSIX and Windows. The temporary file lives in the
*same* folder so the rename never crosses a file system.

`check_output_file` is what a command runs on its output options before its work (a model load, a forward
pass), and `read_text_file` reads a UTF-8 input option: both fail with one line naming the option and the path.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path next to `path`; on success rename it to `path`, on error delete it.

        with atomic_path("model.safetensors") as tmp:
            save_file(tensors, tmp)
    """
    path = Path(path)
    if path.is_dir():  # os.replace would fail only after the writer's work, with the temp file's name
        raise IsADirectoryError(f"{path}: is a folder; expected a file name")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"  # a name nobody else uses
    try:
        yield tmp
        _default_permissions(tmp)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise


def _default_permissions(path: Path) -> None:
    """Give a file its writer made private (safetensors 0.8 writes 0o600) the permissions a plain open() gets in
    its folder, so that a model in a shared runs folder is as readable as the config.json beside it. What open()
    gets (the umask, or the folder's default ACL) is read off a probe file made there; a file system that keeps
    no modes (chmod fails) is left alone."""
    if not path.is_file() or stat.S_IMODE(path.stat().st_mode) & 0o077:  # (not private: as its writer meant)
        return
    probe = path.with_name(path.name + ".mode")
    try:
        with open(probe, "x"):
            pass
        wanted = stat.S_IMODE(probe.stat().st_mode) & 0o666
        probe.unlink()
        os.chmod(path, wanted)
    except OSError:
        with contextlib.suppress(OSError):
            probe.unlink()


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


def check_output_file(path: str | os.PathLike, option: str, inputs: dict | None = None) -> None:
    """Refuse an output path that cannot be written, or that is one of the command's inputs ({option: path}),
    before any work is done: a ValueError naming `option`."""
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{option} {path}: is a folder; expected a file name")
    # atomic_path creates the missing folders: the nearest existing one must be a writable folder
    folder = check_folder_path(path.parent, option, shown=path)
    if folder is not None and not os.access(folder, os.W_OK | os.X_OK):
        raise ValueError(f"{option} {path}: no permission to write in {folder}")
    for input_option, input_path in (inputs or {}).items():
        if input_path and path.exists() and Path(input_path).exists() and os.path.samefile(path, input_path):
            raise ValueError(f"{option} {path}: is the {input_option} file; writing it would overwrite the input")


def check_folder_path(path: str | os.PathLike, option: str, shown=None) -> Path | None:
    """A folder can be made at `path`: neither it nor a folder above it is a file (else a NotADirectoryError
    naming `option` and `shown`, default `path`). Returns the nearest existing folder (None: none exists)."""
    path = Path(path)
    existing = next((p for p in (path, *path.parents) if p.exists()), None)
    if existing is not None and not existing.is_dir():
        raise NotADirectoryError(f"{option} {shown or path}: {existing} is a file; expected a folder")
    return existing


def check_input_file(path: Path, where: str | None = None, expected: str = "a file") -> None:
    """FileNotFoundError unless `path` is a file: one line, "WHERE: no such file" or, for a folder, "WHERE: is a
    folder; expected EXPECTED" (where: how the user gave the path, e.g. "--input x.csv"; default the path)."""
    if not path.is_file():
        raise FileNotFoundError(f"{where or path}: " + (f"is a folder; expected {expected}" if path.is_dir()
                                                        else "no such file"))


def read_text_file(path: str | os.PathLike, option: str | None = None) -> str:
    """The UTF-8 text of a file (a byte-order mark dropped, as Excel and Notepad write one); a one-line error
    naming the file, and the option that gave it if any, otherwise."""
    where = f"{option} {path}" if option else str(path)  # (the path as the user gave it)
    path = Path(path)
    check_input_file(path, where)
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as e:
        raise ValueError(f"{where}: not UTF-8 text ({e.reason} at byte {e.start})") from None
