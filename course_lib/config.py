"""One ``TrainConfig``: every knob of a run, stored in ``DIR/config.json`` and in every
checkpoint, so a run can always say how it was made (nanoGPT's habit)."""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
from dataclasses import dataclass, field, fields
from pathlib import Path

RESUME_MODES = ("full", "weights-only", "no-rng", "epoch-start")
KILL_MODES = ("sigkill", "sigterm", "during-save")
REDUCTIONS = ("ddp", "invariant")

# keys that change what a checkpoint *is*; a resume with other values here is refused
SHAPE_KEYS = ("model", "tokenizer", "max_length", "embed_dim", "global_batch_size", "train_limit", "data_source", "seed")
# fields that hold one value per planned kill (``--kill-at-step 13 27``), and their item type
LIST_FIELDS = {"kill_at_step": int, "kill_rank": int, "kill_mode": str}


class ConfigError(ValueError):
    """A setting that cannot work, with what to do instead. The command line prints it as one
    line (exit code 2) before any process starts."""


def _as_list(value, item_type) -> list:
    """``13``, ``"13,27"``, ``[13, 27]`` -> ``[13, 27]`` (JSON and the command line give lists,
    Python callers often a single value)."""
    if isinstance(value, str):
        value = [v for v in value.replace(",", " ").split() if v]
    elif not isinstance(value, (list, tuple)):
        value = [value]
    try:
        return [item_type(v) for v in value]
    except ValueError:
        raise ConfigError(f"expected {item_type.__name__} values, got {value!r}") from None


@dataclass
class TrainConfig:
    run_dir: str = "runs/default"
    # model and data
    model: str = "bag"                  # bag | transformer | minilm
    tokenizer: str = "wordpiece"
    data_source: str = "offline"        # see course_lib.data.load_imdb
    data_path: str | None = None
    train_limit: int = 0                # 0 = every training review
    eval_limit: int = 0                 # 0 = the whole held-out split
    max_length: int = 512
    embed_dim: int = 32
    dropout: float = 0.1
    # optimisation
    epochs: int = 2
    max_steps: int = 0                  # 0 = epochs decide; else a cap on optimizer steps
    global_batch_size: int = 64         # split evenly over the ranks
    micro_batch: int = 0                # 0 = a rank's whole share at once (invariant: global batch / 4); else accumulate
    reduction: str = "ddp"              # ddp (all-reduce) | invariant (same bits on any world size; see invariant.py)
    lr: float = 5e-3
    weight_decay: float = 0.01
    warmup_steps: int = 50
    schedule_steps: int = 0             # length the LR decay is planned for; 0 = the run's planned length
    grad_clip: float = 1.0
    fused_adamw: bool = True            # AdamW in one pass over each tensor (else foreach); see Trainer
    grad_bucket_view: bool = True       # gradients live in DDP's all-reduce buckets (no copy each step)
    seed: int = 0
    # processes
    world_size: int = 2
    backend: str = "auto"               # auto | gloo | nccl
    device: str = "auto"                # auto | cpu | cuda
    precision: str = "fp32"             # fp32 | bf16 (autocast; for GPUs)
    threads_per_rank: int = 0           # 0 = cores // world_size
    timeout_s: float = 120.0
    log_every: int = 20                 # book-style per-rank lines every N steps (and the first)
    # checkpoints
    save_every_steps: int = 100
    save_every_epochs: int = 0
    keep_last: int = 3
    async_save: bool = False            # rank 0 writes checkpoints in a background thread
    resume: str = "none"                # none | auto | a checkpoint folder
    resume_mode: str = "full"
    # elastic: nodes that leave and join a running group, which re-forms in-process (membership.py, regroup.py)
    elastic_endpoint: str = ""          # host:port where the members agree (torchrun's --rdzv-endpoint); "" = a fixed group
    elastic_heartbeat_s: float = 0.2    # a member silent for 5 beats is dead: found sooner, but a starved one too
    elastic_peer_state: bool = True     # a joining rank takes the state from a live peer's memory (else the checkpoint)
    # faults (station 5): one kill per listed step, each fired once per run (see faults.py)
    kill_at_step: list[int] = field(default_factory=list)     # [] = no fault
    kill_rank: list[int] = field(default_factory=lambda: [0])  # one rank, or one per kill
    kill_mode: list[str] = field(default_factory=lambda: ["sigkill"])
    # evaluation
    eval_every_steps: int = 0           # 0 = at the end of each epoch
    skip_set_epoch: bool = False        # teaching only: reproduce the classic "same order every epoch" bug
    cache_dir: str | None = None

    def __post_init__(self):
        for name, item_type in LIST_FIELDS.items():
            setattr(self, name, _as_list(getattr(self, name), item_type))
        self.kill_at_step = [s for s in self.kill_at_step if s]  # 0 = no kill (the old single-value form)
        problems = []
        if self.world_size < 1:
            problems.append(f"world_size must be >= 1 (got {self.world_size}): one process per rank, so --world-size 1 or more")
        elif self.global_batch_size % self.world_size:
            problems.append(f"global_batch_size {self.global_batch_size} must be divisible by world_size {self.world_size}")
        if self.resume_mode not in RESUME_MODES:
            problems.append(f"resume_mode must be one of {RESUME_MODES} (got {self.resume_mode!r})")
        if self.reduction not in REDUCTIONS:
            problems.append(f"reduction must be one of {REDUCTIONS} (got {self.reduction!r})")
        elif self.reduction == "invariant" and self.world_size >= 1:
            from .invariant import check_layout

            why = check_layout(self.global_batch_size, self.micro_batch, self.world_size)
            if why:
                problems.append(why)
        if self.elastic_endpoint:
            host, _, port = self.elastic_endpoint.rpartition(":")
            if not host or not port.isdigit():
                problems.append(f"elastic_endpoint {self.elastic_endpoint!r} must be HOST:PORT (the torchrun rendezvous "
                                "endpoint whose store node 0's agent hosts)")
            if self.reduction != "invariant":
                problems.append("an elastic group changes its world size as nodes come and go: it needs "
                                "--reduction invariant (the same bits on any world size)")
            if self.elastic_heartbeat_s <= 0:
                problems.append(f"elastic_heartbeat_s must be > 0 (got {self.elastic_heartbeat_s})")
        if self.precision not in ("fp32", "bf16"):
            problems.append(f"precision must be 'fp32' or 'bf16' (got {self.precision!r})")
        problems += [f"kill_mode must be one of {KILL_MODES} (got {m!r})" for m in self.kill_mode if m not in KILL_MODES]
        if self.kill_at_step:
            problems += [f"kill_rank {r} is not a rank of world_size {self.world_size} (ranks are 0..{self.world_size - 1})"
                         for r in self.kill_rank if not 0 <= r < max(self.world_size, 1)]
            problems += [f"kill_at_step {s} must be a step >= 1" for s in self.kill_at_step if s < 0]
            for name in ("kill_rank", "kill_mode"):
                if len(getattr(self, name)) not in (1, len(self.kill_at_step)):
                    problems.append(f"{name} gives {len(getattr(self, name))} values for {len(self.kill_at_step)} kills: "
                                    "give one value for all kills or one per kill")
        if self.epochs < 1:
            problems.append(f"epochs must be >= 1 (got {self.epochs}); --max-steps caps the run inside them")
        if problems:
            raise ConfigError("bad TrainConfig: " + "; ".join(problems))

    def planned_steps(self, steps_per_epoch: int) -> int:
        """Optimizer steps this run will take: its epochs, capped by ``max_steps``."""
        total = self.epochs * steps_per_epoch
        return min(total, self.max_steps) if self.max_steps else total

    def schedule_length(self, steps_per_epoch: int) -> int:
        """The step at which the LR decay reaches 0: ``schedule_steps``, else the planned length.
        Fixing it up front makes a run that is later extended bit-identical to one planned that long."""
        return self.schedule_steps or self.planned_steps(steps_per_epoch)

    @property
    def batch_per_rank(self) -> int:
        return self.global_batch_size // self.world_size

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "TrainConfig":
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ConfigError(f"unknown TrainConfig keys {sorted(unknown)}")
        return cls(**d)

    def replace(self, **changes) -> "TrainConfig":
        return dataclasses.replace(self, **changes)

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=2, sort_keys=True))

    @classmethod
    def load(cls, path: str | Path) -> "TrainConfig":
        return cls.from_dict(json.loads(Path(path).read_text()))

    def shape_hash(self) -> str:
        """Hash of the keys that a checkpoint must agree with (see :data:`SHAPE_KEYS`)."""
        blob = json.dumps({k: getattr(self, k) for k in SHAPE_KEYS}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    # ------------------------------------------------------------------ command line
    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        """One ``--kebab-case`` option per field, typed from the field's default."""
        for f in fields(cls):
            flag = "--" + f.name.replace("_", "-")
            if f.name in LIST_FIELDS:
                parser.add_argument(flag, type=LIST_FIELDS[f.name], nargs="+", default=None, metavar=f.name.upper())
            elif isinstance(f.default, bool):
                parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=None)
            else:
                typ = type(f.default) if f.default is not None else str
                parser.add_argument(flag, type=typ, default=None, metavar=f.name.upper())

    def to_args(self, skip: tuple[str, ...] = ()) -> list[str]:
        """The command-line flags that rebuild this config (values that differ from the defaults)."""
        default, out = TrainConfig().to_dict(), []
        for key, value in self.to_dict().items():
            if key in skip or value is None or value == default[key]:
                continue
            flag = "--" + key.replace("_", "-")
            if isinstance(value, bool):
                out.append(flag if value else "--no-" + flag[2:])
            else:
                out += [flag, *map(str, value if isinstance(value, list) else [value])]
        return out

    @classmethod
    def from_args(cls, args: argparse.Namespace, **overrides) -> "TrainConfig":
        values = {f.name: getattr(args, f.name) for f in fields(cls) if getattr(args, f.name, None) is not None}
        return cls(**{**values, **overrides})
