"""A plain loop in torchtitan's style: FSDP2 (fully_shard) over 2 ranks on gloo, the state saved
with torch.distributed.checkpoint into checkpoint/step-N every few steps, through a Stateful
(DCP's recipe: get_state_dict/set_state_dict), and at start the newest step-N folder that has
DCP's .metadata commit file loaded (torchtitan's CheckpointManager._find_load_step).

    python -m torch.distributed.run --standalone --nproc-per-node 2 bench/scorecard/dcp_loop.py --out DIR
"""
import argparse
import hashlib
import os
import re

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.nn.functional as F
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.distributed.checkpoint.stateful import Stateful
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--out", required=True)
args = parser.parse_args()
EPOCHS, SAVE_EVERY = 3, 10
folder = os.path.join(args.out, "checkpoint")


class TrainState(Stateful):
    """What DCP saves and loads: model and optimizer (sharded), scheduler, step."""

    def __init__(self, model, optimizer, scheduler):
        self.model, self.optimizer, self.scheduler, self.step = model, optimizer, scheduler, 0

    def state_dict(self):
        model_sd, optim_sd = get_state_dict(self.model, self.optimizer)
        return {"model": model_sd, "optim": optim_sd, "scheduler": self.scheduler.state_dict(), "step": self.step}

    def load_state_dict(self, state_dict):
        set_state_dict(self.model, self.optimizer, model_state_dict=state_dict["model"],
                       optim_state_dict=state_dict["optim"])
        self.scheduler.load_state_dict(state_dict["scheduler"])
        self.step = state_dict["step"]


def find_load_step() -> int:
    """The newest step-N whose .metadata exists (written last, by rank 0, once every rank has written)."""
    steps = [int(m.group(1)) for d in (os.listdir(folder) if os.path.isdir(folder) else [])
             if (m := re.fullmatch(r"step-(\d+)", d)) and os.path.isfile(os.path.join(folder, d, ".metadata"))]
    return max(steps, default=-1)


dist.init_process_group("gloo")
mesh = init_device_mesh("cpu", (dist.get_world_size(),))
torch.manual_seed(0)  # the same initial weights on every rank, then sharded

model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 2))
for layer in model:
    if isinstance(layer, torch.nn.Linear):
        fully_shard(layer, mesh=mesh)
fully_shard(model, mesh=mesh)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1 - s / (EPOCHS * 16))

g = torch.Generator().manual_seed(1234)
x = torch.randn(256, 16, generator=g)
y = (x[:, 0] > 0).long()
data = TensorDataset(x, y)
sampler = DistributedSampler(data, shuffle=True, seed=0)
loader = DataLoader(data, batch_size=8, sampler=sampler)  # 16 steps an epoch; 16 samples a step over the 2 ranks

state = TrainState(model, optimizer, scheduler)
if (step := find_load_step()) >= 0:
    dcp.load({"train": state}, checkpoint_id=os.path.join(folder, f"step-{step}"))
    if dist.get_rank() == 0:
        print(f"resumed from step-{step}", flush=True)

epoch, skip = divmod(state.step, len(loader))
while epoch < EPOCHS:
    sampler.set_epoch(epoch)
    batches = iter(loader)
    for _ in range(skip):  # the batches of this epoch already trained
        next(batches)
    for inputs, targets in batches:
        F.cross_entropy(model(inputs), targets).backward()
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        state.step += 1
        if state.step % SAVE_EVERY == 0:
            dcp.save({"train": state}, checkpoint_id=os.path.join(folder, f"step-{state.step}"))
    epoch, skip = epoch + 1, 0

full = {k: v.full_tensor() for k, v in model.state_dict().items()}  # a collective: every rank
if dist.get_rank() == 0:
    h = hashlib.sha256()
    for name, p in sorted(full.items()):
        h.update(name.encode() + p.numpy().tobytes())
    print("final-params", h.hexdigest()[:16], "steps", state.step, flush=True)
    if os.environ.get("RESULT_FILE"):  # a file whose bytes a crash-consistency tester compares (bench/peer_ckpt_chaos.py)
        open(os.environ["RESULT_FILE"], "w").write(h.hexdigest()[:16])
dist.destroy_process_group()
# not torchtitan's: about 1 exit in 5 here died of SIGABRT ("terminate called without an active
# exception") after destroy_process_group; the work is on disk, so leave without the interpreter's teardown
os._exit(0)
