"""One rank of tests/training/test_sharded.py: the split AdamW step against the whole-buffer step.

    python -m minibert.training.procs -n 3 python sharded_worker.py OUT_DIR     (or mpiexec -n 2 ...)

Every rank builds the same tiny model twice. Each step, each rank draws its own gradient (seeded by step and
rank), then one copy takes the split step (ShardedAdamW) and the other the whole-buffer one (allreduce_sum_,
clip_grad_norm, AdamW over every weight). Steps 2 and 4 have gradients large enough that clipping rescales them.
After step 3 the split optimizer's state is gathered and a fresh ShardedAdamW resumes from it. Writes, per
rank, both copies' weights and norms, and rank 0 both optimizer states, to OUT_DIR (npz, no pickle).
"""

import sys

import numpy as np

from minibert import AdamW, BertConfig, BertForPreTraining
from minibert.optim import clip_grad_norm
from minibert.training.distributed import communicator
from minibert.training.sharded import ShardedAdamW

out = sys.argv[1]
comm = communicator()
cfg = BertConfig.preset("tiny")
whole_model, split_model = BertForPreTraining(cfg, seed=0), BertForPreTraining(cfg, seed=0)
options = dict(lr=1e-2, weight_decay=0.01)
whole = AdamW(whole_model.params, whole_model.grads, **options)
split = ShardedAdamW(split_model.params, split_model.grads, comm, **options)
norms = {"norm_whole": [], "norm_split": [], "sums": []}
for step in range(1, 6):
    rng = np.random.default_rng([step, comm.rank])
    g = rng.standard_normal(whole_model.grads.buffer.size).astype(np.float32) * (50.0 if step % 2 == 0 else 1e-5)
    whole_model.grads.buffer[...] = g
    split_model.grads.buffer[...] = g
    sums = np.array([comm.rank + 1.0, 0.5])
    # The split step first: under --procs its gradients live in this rank's row of the shared area, which the
    # whole step's allreduce (a buffer of the same size) then writes over.
    norm, summed = split.reduce_and_clip(sums, 1.0)
    norms["norm_split"].append(norm)
    norms["sums"].append(summed.tolist())
    split.step()
    comm.allreduce_sum_(whole_model.grads.buffer)
    norms["norm_whole"].append(clip_grad_norm(whole_model.grads, 1.0))
    whole.step()
    if step == 3:  # a checkpoint and a resume, as the training loop does them
        state = split.state_dict()
        if comm.is_root:
            np.savez(f"{out}/state.npz", **state)
            np.savez(f"{out}/whole_state.npz", **whole.state_dict())
        comm.barrier()  # as pretrain does: the gathered arrays are rows where the other ranks' gradients go next
        state = comm.broadcast({k: v.tolist() for k, v in state.items()} if comm.is_root else None)
        split = ShardedAdamW(split_model.params, split_model.grads, comm, **options)
        split.load_state_dict({k: np.asarray(v, dtype=np.int64 if k == "step" else np.float32)
                               for k, v in state.items()})
# Under --procs the split model's gradients live in this rank's row of the shared area (no copy per step), and
# its weights in one buffer that all ranks map: what the last rank writes there, rank 0 reads.
kept = any(np.may_share_memory(split_model.grads.buffer, area) for area in getattr(comm, "areas", {}).values())
weights = split_model.params.buffer.copy()
comm.barrier()
if comm.rank == comm.size - 1:
    split_model.params.buffer[-1] = 12345.0
comm.barrier()
seen_by_root = bool(split_model.params.buffer[-1] == 12345.0)  # (rank 0's is the one checked)
comm.barrier()
split_model.params.buffer[-1] = weights[-1]
np.savez(f"{out}/rank{comm.rank}.npz", whole=whole_model.params.buffer, split=weights,
         kept_in_shared_row=np.array(kept), weights_shared=np.array(seen_by_root),
         moments=np.concatenate([split.adamw.m, split.adamw.v]), bounds=np.array(split.bounds),
         **{k: np.array(v) for k, v in norms.items()})
