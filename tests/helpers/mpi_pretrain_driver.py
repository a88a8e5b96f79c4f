"""Run `pretrain` on every rank of an mpiexec job, as the CLI does, with what the MPI tests need on top:

    mpiexec -n 2 python mpi_pretrain_driver.py SETTINGS.json [--dump DIR] [--fail STEP:RANK:raise|kill]

--dump DIR   each rank writes its final weights to DIR/rank<r>.safetensors (to compare the ranks' copies)
--fail       rank RANK raises an exception (or kills itself with SIGKILL) during optimizer step STEP (1-based),
             after that step's backward, as a crash or a lost machine would
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path

import minibert.training.pretrain as pretrain_module
from minibert.io.safetensors_io import save_safetensors
from minibert.training.distributed import communicator
from minibert.training.settings import PretrainSettings


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("settings")
    parser.add_argument("--dump")
    parser.add_argument("--fail")
    args = parser.parse_args()
    comm = communicator()
    settings = PretrainSettings.from_dict(json.loads(Path(args.settings).read_text()))

    optimizers = []
    sharded = pretrain_module.ShardedAdamW  # the optimizer of a run on several ranks (training/sharded.py)

    class RecordingAdamW(sharded):  # keeps a handle on the model's weights for --dump
        def __init__(self, params, *a, **k):
            super().__init__(params, *a, **k)
            optimizers.append(self)

    pretrain_module.ShardedAdamW = RecordingAdamW
    if args.fail:
        step, rank, kind = args.fail.split(":")
        calls = {"n": 0}

        def failing_reduce_and_clip(self, sums, max_norm):  # the summing and clipping of a step's gradient
            calls["n"] += 1
            if calls["n"] == int(step) and comm.rank == int(rank):
                if kind == "kill":
                    os.kill(os.getpid(), signal.SIGKILL)
                raise RuntimeError(f"injected failure in step {step}")
            return sharded.reduce_and_clip(self, sums, max_norm)

        RecordingAdamW.reduce_and_clip = failing_reduce_and_clip

    with comm.abort_on_error("driver"):
        pretrain_module.pretrain(settings, log=lambda *a: None, comm=comm)
    if args.dump:
        params = optimizers[0].params
        save_safetensors({k: v.copy() for k, v in params.items()}, Path(args.dump) / f"rank{comm.rank}.safetensors")
    return 0


if __name__ == "__main__":
    sys.exit(main())
