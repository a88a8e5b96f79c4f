"""The built-in tasks conll2003 and stsb read from small fixture files in the packages' layout, so that tests of
their loaders, runs and `minibert bench` need neither the data packages nor minutes."""

import importlib.metadata
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


def installed(package) -> bool:
    """Whether a data package is installed (read in place, never imported)."""
    try:
        importlib.metadata.distribution(package)
        return True
    except importlib.metadata.PackageNotFoundError:
        return False


@pytest.fixture
def small_tasks(monkeypatch):
    from minibert.data import builtin
    monkeypatch.setattr(builtin, "conll2003_path", lambda split: FIXTURES / "conll2003_small" / f"{split}.txt")
    monkeypatch.setattr(builtin, "stsb_path", lambda split: FIXTURES / "stsb_small" / f"sts-{split}.csv")
    return FIXTURES
