"""An error a command reports as one line (cli.main) is one line from a rank of --procs or mpiexec too
(training/distributed.py's report_rank_error), not a traceback: e.g. an --out that cannot be written."""

import sys
import types

import pytest

from minibert import cli
from minibert.training.distributed import report_rank_error

ERRORS = [ValueError("bad value"), FileNotFoundError("no such file"), FileExistsError("holds a model"),
          NotADirectoryError("a file in the way"), IsADirectoryError("is a folder"),
          PermissionError("no permission to write in /x"), ImportError("pip install it"),
          OSError(30, "Read-only file system"), TypeError("a bug"), KeyError("a bug")]


def cli_status(monkeypatch, error):
    """cli.main's exit status for a command that raises `error`; None when it lets the error through (a
    traceback)."""
    module = types.ModuleType("minibert_test_raising_command")
    module.add_arguments = lambda parser: None

    def run(args):
        raise error
    module.run = run
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(cli.COMMANDS, "raise", (module.__name__, "raises an error"))
    try:
        return cli.main(["raise"])
    except Exception:
        return None


@pytest.mark.parametrize("error", ERRORS, ids=lambda e: type(e).__name__)
def test_a_rank_reports_what_the_command_line_reports_as_one_line(monkeypatch, capsys, error):
    monkeypatch.delenv("MINIBERT_DEBUG", raising=False)
    one_line = cli_status(monkeypatch, error) == 2
    capsys.readouterr()
    status = report_rank_error(error, "minibert finetune", 1, 2)
    err = capsys.readouterr().err
    assert (status == 2) == one_line, err
    if one_line:
        assert err.count("\n") == 1 and err.startswith("minibert finetune (rank 1 of 2): error: "), err
    else:
        assert "Traceback" in err and status == 1
