"""The state from a live peer: two real processes, a gloo group, the sender's model, optimizer,
scheduler and trainer state arrives bit-equal (digest checked on both sides, and against a
checkpoint folder written from the same state)."""
import subprocess
import sys
import textwrap

import torch
from helpers import digest_of_checkpoint

from course_lib._runtime.portability import free_port
from course_lib.beyond.elastic.peer_state import training_state_digest
from course_lib.checkpoint import store as ckpt

STATE = """
import torch
torch.manual_seed(SEED)  # the receiver's own state differs from the sender's
model = torch.nn.Sequential(torch.nn.Embedding(50, 8), torch.nn.Linear(8, 2))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0 / (s + 1))
model(torch.tensor([[1, 2, 3]])).sum().backward()
opt.step(); sched.step()
parts = {"model.pt": model.state_dict(), "optimizer.pt": opt.state_dict(), "scheduler.pt": sched.state_dict(),
         "trainer.pt": {"state": {"epoch": 0, "global_step": 1, "last_loss": 0.5}, "config": '{"world_size": 2}'}}
"""

RANK = """
import json, sys
from datetime import timedelta
import torch.distributed as dist
from course_lib.beyond.elastic.peer_state import share, training_state_digest
rank, port = int(sys.argv[1]), int(sys.argv[2])
dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2,
                        timeout=timedelta(seconds=30))
received, info = share(parts if rank == 0 else None, 0, [1], rank)
print(json.dumps({"mine": training_state_digest(received or parts), "info": info}))
"""


def test_digest_is_of_the_content_not_of_the_bytes(tmp_path):
    namespace = {"SEED": 0}
    exec(STATE, namespace)
    parts = namespace["parts"]
    for name, obj in parts.items():
        ckpt.write_part(tmp_path, name, obj)
    assert digest_of_checkpoint(tmp_path) == training_state_digest(parts)  # written and read back: the same digest
    parts["model.pt"] = {k: v.clone() for k, v in parts["model.pt"].items()}  # another container, other bytes
    assert training_state_digest(parts) == digest_of_checkpoint(tmp_path)
    flipped = parts["model.pt"]["1.bias"]
    flipped.view(torch.int32)[0] ^= 1  # one bit
    assert training_state_digest(parts) != digest_of_checkpoint(tmp_path)


def test_the_digest_is_of_the_state_not_of_the_group_that_holds_it():
    """Step 26 held by a group of one and by a group of two: the same state (a newcomer handed a
    step, then left alone before its first step, saves it from a group of another size)."""
    namespace = {"SEED": 0}
    exec(STATE, namespace)
    parts = namespace["parts"]
    trainer = parts["trainer.pt"]
    as_one = {**parts, "trainer.pt": {**trainer, "config": '{"world_size": 1}'}}
    assert training_state_digest(as_one) == training_state_digest(parts)
    one_step_on = {**parts, "trainer.pt": {**trainer, "state": {**trainer["state"], "global_step": 2}}}
    assert training_state_digest(one_step_on) != training_state_digest(parts)


def test_a_newcomer_receives_the_senders_state_bit_equal():
    import json

    port = free_port()
    script = "import sys\nSEED = int(sys.argv[1])\n" + textwrap.dedent(STATE) + textwrap.dedent(RANK)
    ranks = [subprocess.Popen([sys.executable, "-c", script, str(r), str(port)], stdout=subprocess.PIPE, text=True)
             for r in (0, 1)]
    out = [json.loads(p.communicate(timeout=60)[0].strip().splitlines()[-1]) for p in ranks]
    sender, receiver = out
    assert receiver["mine"] == sender["mine"] == receiver["info"]["digest"] == sender["info"]["digest"]
    assert receiver["info"]["bytes"] > 0 and receiver["info"]["from_rank"] == 0
