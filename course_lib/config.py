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


# the groups of ``train --help``, in the order shown
DATA, OPTIM, PROCS, CKPT, FAULTS, OUTPUT = "model and data", "optimisation", "processes", "checkpoints", "faults", "output"
TEACHING = "teaching switches (each breaks the run on purpose)"
GROUPS = (DATA, OPTIM, PROCS, CKPT, FAULTS, OUTPUT, TEACHING)
MODEL_NAMES = ("bag", "transformer", "minilm")       # course_lib.ddp.models.MODELS (a test keeps them equal)
DATA_SOURCES = ("auto", "hub", "offline", "path")    # course_lib.data.sources.SOURCES is this tuple


def option(default, group: str, help: str, choices: tuple = (), metavar: str = ""):
    """A ``TrainConfig`` field together with its command-line documentation: the field's metadata
    is the only source of ``train --help`` (group, help line, choices), so a new knob is one line."""
    meta = {"group": group, "help": help, **({"choices": tuple(choices)} if choices else {}),
            **({"metavar": metavar} if metavar else {})}
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata=meta)
    return field(default=default, metadata=meta)


@dataclass
class TrainConfig:
    """Every setting of a run, validated as it is built (:class:`ConfigError`, one line, for a
    setting that cannot work). Notebook 03, §4; notebook 04 and notebook 05, their opening cells."""
    run_dir: str = option("runs/default", OUTPUT, "the run's folder: config, ledger, TensorBoard, checkpoints, final model")
    # model and data
    model: str = option("bag", DATA, "bag: word n-grams (seconds on CPU); transformer: small, from scratch; "
                        "minilm: pretrained all-MiniLM-L6-v2", MODEL_NAMES)
    tokenizer: str = option("wordpiece", DATA, "wordpiece (BERT's, 30,522 tokens), bpe (GPT-2's, 50,257), a saved tokenizer "
                            "folder, or a Hub name")
    data_source: str = option("offline", DATA, "where the reviews come from; auto: the Hub when HF_HUB_OFFLINE=0, else "
                              "offline (see data/README.md)", DATA_SOURCES)
    data_path: str | None = option(None, DATA, "with --data-source path: an aclImdb folder, or a CSV/parquet file with "
                                   "'text' and 'label' columns")
    train_limit: int = option(0, DATA, "train on the first N reviews of the training split; 0 = all of them")
    eval_limit: int = option(0, DATA, "score the first N held-out reviews; 0 = the whole held-out split")
    max_length: int = option(512, DATA, "tokens kept per review (longer ones are truncated)")
    embed_dim: int = option(32, DATA, "embedding width of the bag model")
    dropout: float = option(0.1, DATA, "dropout probability")
    # optimisation
    epochs: int = option(2, OPTIM, "passes over the training split")
    max_steps: int = option(0, OPTIM, "stop after N optimizer steps; 0 = the epochs decide")
    global_batch_size: int = option(64, OPTIM, "reviews per optimizer step, over all ranks (divisible by the world size)")
    micro_batch: int = option(0, OPTIM, "reviews per forward/backward pass, accumulated to the batch; 0 = a rank's whole "
                              "share (or the reduction's own layout)")
    reduction: str = option("ddp", OPTIM, "how the ranks' gradients are summed: ddp, DDP's all-reduce (the chapter's), "
                            "or an extension's (the choices below)")
    lr: float = option(5e-3, OPTIM, "peak learning rate of AdamW")
    weight_decay: float = option(0.01, OPTIM, "AdamW's weight decay")
    warmup_steps: int = option(50, OPTIM, "steps of linear warm-up before the linear decay to 0")
    schedule_steps: int = option(0, OPTIM, "step at which the learning rate reaches 0; 0 = the run's planned end (fix "
                                 "it to extend a run bit-identically)")
    grad_clip: float = option(1.0, OPTIM, "clip the gradient norm to this value")
    fused_adamw: bool = option(True, OPTIM, "AdamW in one pass over each tensor (faster on CPU than foreach)")
    grad_bucket_view: bool = option(True, OPTIM, "gradients live in DDP's all-reduce buckets (no copy per step)")
    seed: int = option(0, OPTIM, "seed of the initial weights, the data order and dropout")
    # processes
    world_size: int = option(2, PROCS, "number of ranks (processes); under torchrun, torchrun's")
    backend: str = option("auto", PROCS, "process-group backend; auto: nccl with GPUs, else gloo", ("auto", "gloo", "nccl"))
    device: str = option("auto", PROCS, "auto: one GPU per rank when there are GPUs, else the CPU", ("auto", "cpu", "cuda"))
    precision: str = option("fp32", PROCS, "bf16: autocast for GPUs (weights and optimizer stay fp32)", ("fp32", "bf16"))
    deterministic: bool = option(False, PROCS, "deterministic kernels (torch.use_deterministic_algorithms, "
                                 "CUBLAS_WORKSPACE_CONFIG=:4096:8): what a bit-identical resume needs on GPUs")
    threads_per_rank: int = option(0, PROCS, "intra-op threads per rank; 0 = cores // ranks (or the reduction's own)")
    start_method: str = option("auto", PROCS, "how launch() starts its ranks; spawn: a fresh interpreter each (~2 s of "
                               "imports); forkserver: a fork of a server that imported torch once; auto: forkserver "
                               "where the OS has it, else spawn", ("auto", "forkserver", "spawn"))
    timeout_s: float = option(120.0, PROCS, "seconds a collective may wait for a peer before the process group fails",
                              metavar="SECONDS")
    log_every: int = option(20, OUTPUT, "print each rank's book-style line every N steps (and at the first and last)")
    # checkpoints
    save_every_steps: int = option(100, CKPT, "save a checkpoint every N optimizer steps; 0 = off "
                                   "(python -m course_lib advise says how often)")
    save_every_epochs: int = option(0, CKPT, "save a checkpoint every N epochs; 0 = off")
    keep_last: int = option(3, CKPT, "committed checkpoints kept (older ones are deleted)")
    async_save: bool = option(False, CKPT, "rank 0 writes checkpoints in a background thread while training goes on")
    resume: str = option("none", CKPT, "none: start fresh; auto: the newest valid checkpoint of --run-dir; or a "
                         "checkpoint folder DIR/checkpoints/step-N")
    resume_mode: str = option("full", CKPT, "what a resume restores; anything but full leaves state out on purpose "
                              "(notebook 05)", RESUME_MODES)
    # faults (station 5): one kill per listed step, each fired once per run (see faults.py)
    kill_at_step: list[int] = option([], FAULTS, "kill a rank as these steps begin, each once per run "
                                     "(--kill-at-step 13 27); none = no fault")
    kill_rank: list[int] = option([0], FAULTS, "the rank to kill: one for all kills, or one per kill")
    kill_mode: list[str] = option(["sigkill"], FAULTS, "how: one for all kills, or one per kill", KILL_MODES)
    # evaluation
    eval_every_steps: int = option(0, OUTPUT, "evaluate on the held-out split every N steps; 0 = once, at the end")
    cache_dir: str | None = option(None, DATA, "where prepared tokens are cached; none = $COURSE_LIB_CACHE, else "
                                   "~/.cache/course_lib")
    # teaching switches: each breaks the run on purpose, for one lesson of notebook 03; never in a real run
    skip_set_epoch: bool = option(False, TEACHING, "skip sampler.set_epoch: the classic 'same order every epoch' bug")
    corrupt_rank: int = option(-1, TEACHING, "this rank trains on random labels (a corrupted shard); -1 = none")
    skip_grad_sync: bool = option(False, TEACHING, "DDP never all-reduces the gradients (each rank trains alone); the "
                                  "parameter check at the end tells")

    def __post_init__(self):
        for name, item_type in LIST_FIELDS.items():
            setattr(self, name, _as_list(getattr(self, name), item_type))
        self.kill_at_step = [s for s in self.kill_at_step if s]  # 0 = no kill (the old single-value form)
        problems = []
        if self.world_size < 1:
            problems.append(f"world_size must be >= 1 (got {self.world_size}): one process per rank, "
                            "so --world-size 1 or more")
        elif self.global_batch_size % self.world_size:
            problems.append(f"global_batch_size {self.global_batch_size} must be divisible by world_size {self.world_size}")
        if self.resume_mode not in RESUME_MODES:
            problems.append(f"resume_mode must be one of {RESUME_MODES} (got {self.resume_mode!r})")
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
        if not -1 <= self.corrupt_rank < self.world_size:
            problems.append(f"corrupt_rank {self.corrupt_rank} is not a rank of world_size {self.world_size} (-1 = none)")
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

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict, strict: bool = True) -> TrainConfig:
        """The config ``d`` describes; a key that is no field raises :class:`ConfigError`, or is
        dropped with ``strict=False`` (a checkpoint's record, which may name an extension's settings)."""
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known
        if unknown and strict:
            raise ConfigError(f"unknown TrainConfig keys {sorted(unknown)}")
        return cls(**{k: v for k, v in d.items() if k in known})

    def replace(self, **changes) -> TrainConfig:
        return dataclasses.replace(self, **changes)

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=2, sort_keys=True))

    def shape_hash(self) -> str:
        """Hash of the keys that a checkpoint must agree with (see :data:`SHAPE_KEYS`)."""
        blob = json.dumps({k: getattr(self, k) for k in SHAPE_KEYS}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    # ------------------------------------------------------------------ command line
    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser, choices: dict[str, tuple] | None = None) -> None:
        """One ``--kebab-case`` option per field, typed from its default, documented from its
        metadata, in the groups of :data:`GROUPS`; ``choices`` adds the choices a front door
        knows (an extension's ``--reduction``). Defaults stay ``None`` in the namespace, so
        :meth:`from_args` knows which options were given."""
        groups = {name: parser.add_argument_group(name) for name in GROUPS}
        for f in fields(cls):
            meta = {**f.metadata, **({"choices": choices[f.name]} if choices and f.name in choices else {})}
            default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
            shown = " ".join(map(str, default)) if isinstance(default, list) else default
            help = meta.get("help", "")
            if "choices" in meta and f.name in LIST_FIELDS:  # a single value shows its choices as {a,b}
                help += f" (one of: {', '.join(meta['choices'])})"
            help += f" (default: {'none' if shown in (None, '') else shown})"
            kw = {"default": None, "help": help, **({"choices": meta["choices"]} if "choices" in meta else {})}
            word = f.name.split("_")[-1].upper()  # kill_rank: RANK
            if f.name in LIST_FIELDS:
                kw.update(type=LIST_FIELDS[f.name], nargs="+", metavar=word)
            elif isinstance(default, bool):
                kw.update(action=argparse.BooleanOptionalAction)
            elif "choices" not in meta:  # else argparse shows them as the metavar: {a,b}
                kw.update(type=type(default) if default is not None else str,
                          metavar=meta.get("metavar") or ("N" if isinstance(default, int) else word))
            groups.get(meta.get("group", ""), parser).add_argument("--" + f.name.replace("_", "-"), **kw)

    def to_args(self, skip: tuple[str, ...] = (), keep: tuple[str, ...] = ()) -> list[str]:
        """The command-line flags that rebuild this config: values that differ from the defaults,
        and those named in ``keep`` (a command that relies on them says so)."""
        default, out = TrainConfig().to_dict(), []
        for key, value in self.to_dict().items():
            if key in skip or value is None or (value == default[key] and key not in keep):
                continue
            flag = "--" + key.replace("_", "-")
            if isinstance(value, bool):
                out.append(flag if value else "--no-" + flag[2:])
            else:
                out += [flag, *map(str, value if isinstance(value, list) else [value])]
        return out

    @classmethod
    def from_args(cls, args: argparse.Namespace, **overrides) -> TrainConfig:
        values = {f.name: getattr(args, f.name) for f in fields(cls) if getattr(args, f.name, None) is not None}
        return cls(**{**values, **overrides})
