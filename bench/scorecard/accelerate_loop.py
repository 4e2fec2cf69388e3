"""accelerate, as its checkpointing guide and examples/by_feature/checkpointing.py teach it:
accelerator.save_state() into a folder step_N every few steps, accelerator.load_state() of the
newest one at start, the step taken from the folder's name, and
accelerator.skip_first_batches() for the batches the resumed epoch already trained.

    python bench/scorecard/accelerate_loop.py --out DIR     # started again in DIR, it resumes
"""
import argparse
import hashlib
import os
import re

import torch
import torch.nn.functional as F
from accelerate import Accelerator
from accelerate.utils import set_seed
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--out", required=True)
args = parser.parse_args()
EPOCHS, SAVE_EVERY = 3, 10

accelerator = Accelerator(cpu=True)
set_seed(0)  # random, numpy, torch: before the model is built

g = torch.Generator().manual_seed(1234)
x = torch.randn(256, 16, generator=g)
y = (x[:, 0] > 0).long()
train_dataloader = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True)

model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Dropout(0.1), torch.nn.Linear(32, 2))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
lr_scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1 - s / (EPOCHS * 16))
model, optimizer, train_dataloader, lr_scheduler = accelerator.prepare(model, optimizer, train_dataloader, lr_scheduler)

# the example's resume: the state of the newest step_N folder, the step from its name
overall_step, starting_epoch, resume_step = 0, 0, 0
steps = [int(m.group(1)) for d in (os.listdir(args.out) if os.path.isdir(args.out) else [])
         if (m := re.fullmatch(r"step_(\d+)", d))]
if steps:
    overall_step = max(steps)
    accelerator.load_state(os.path.join(args.out, f"step_{overall_step}"))
    starting_epoch, resume_step = divmod(overall_step, len(train_dataloader))
    accelerator.print(f"resumed from step_{overall_step}")

for epoch in range(starting_epoch, EPOCHS):
    model.train()
    if epoch == starting_epoch and resume_step:
        active_dataloader = accelerator.skip_first_batches(train_dataloader, resume_step)
    else:
        active_dataloader = train_dataloader
    for inputs, targets in active_dataloader:
        loss = F.cross_entropy(model(inputs), targets)
        accelerator.backward(loss)
        optimizer.step()
        lr_scheduler.step()
        optimizer.zero_grad()
        overall_step += 1
        if overall_step % SAVE_EVERY == 0:
            accelerator.save_state(os.path.join(args.out, f"step_{overall_step}"))

h = hashlib.sha256()
for name, p in sorted(accelerator.unwrap_model(model).named_parameters()):
    h.update(name.encode() + p.detach().numpy().tobytes())
accelerator.print("final-params", h.hexdigest()[:16], "steps", overall_step)
if os.environ.get("RESULT_FILE"):  # a file whose bytes a crash-consistency tester compares (bench/peer_ckpt_chaos.py)
    open(os.environ["RESULT_FILE"], "w").write(h.hexdigest()[:16])
