"""What the probe writes: one JSON object per line in ``<out>/<pid>-<ns>.jsonl``, by
:mod:`resume_audit_probe` inside an audited process, read back by :mod:`resume_audit.records`.

The two sides share nothing but these names. Each record has ``type`` (a key of :data:`RECORDS`)
and the keys listed for it; a key may be absent where its value was not taken (the full digests
every ``every`` steps, CUDA's RNG before CUDA is initialised, ...). ``tests/test_audit.py`` checks
that a real process writes no key this schema does not name.

Two step numbers appear throughout. ``local_step``: optimizer steps *this process* had finished
when the event happened (a step record: its own number, 1-based). ``step``: the same step in the
uninterrupted run's numbering, once the process knows where it went on from (``None`` before).
"""

DIGEST = "16 hex characters: sha256 over the structure, each tensor by dtype, shape and CRC-32"
_WHERE = {"local_step": "steps this process had finished", "rank": "torch.distributed's rank, else $RANK, else 0",
          "t": "epoch seconds"}

RECORDS = {
    "start": {"pid": "this process", "ppid": "its parent", "argv": "sys.argv", "env_rank": "$RANK",
              "time": "epoch seconds"},
    "step": {
        **_WHERE, "step": "the uninterrupted run's number of this step",
        "optimizer": "which optimizer (0, 1, ... by first step)",
        "lr": "each param group's learning rate, exact", "hyper": "the groups' other settings (" + DIGEST + ")",
        "rng": "{python, numpy, torch, cuda}: each global RNG's state as the step begins",
        "batches": "each batch a DataLoader handed out since the previous step", "positions": "each one's place in its "
        "pass (1: the pass's first batch)", "backwards": "backward passes since the previous step (micro-batches)",
        "scale": "a GradScaler's scale at each of its steps since the previous one (skipped ones first)",
        "ema": "the averaged (EMA/SWA) model before the step",
        "params_before": "a process's first step: the parameters before it", "state_before": "and the optimizer state",
        "buffers": "the model's buffers (BatchNorm's running statistics, ...) as the step's forward left them",
        "resumed_from": "a process's first step: the uninterrupted run's step it went on from",
        "grads": "the gradients the step applied", "params": "the parameters after it", "state": "the optimizer "
        "state after it", "probe_s": "seconds spent in the probe so far"},
    "save": {**_WHERE, "step": "the step saved", "target": "the file (absolute), or <BytesIO> for memory",
             "via": "torch.save, safetensors, pickle or numpy", "pending": "backward passes accumulated since the last step",
             "params": "the live parameters at a save on the training thread", "state": "and the optimizer state",
             "holds": "[a, b]: the latest local steps whose parameters (a) and optimizer state (b) are all inside "
                      "the saved object (null: no step's)",
             "live": "the object holds the optimizer's live tensors (training goes on changing them)",
             "thread": "a save from a thread other than the one that trains: its name",
             "holds_error": "why the probe could not tell what the save holds (a tensor kind it does not know)"},
    "sync": {"local_step": "an fsync or rename after a save of this step: its bytes reached a file"},
    "load": {**_WHERE, "target": "the file", "via": "torch.load, safetensors, pickle or numpy",
             "error": "what the load raised", "file": "the file read: {ino, size, mtime_ns}"},
    "file": {**_WHERE, "op": "create, truncate, append, write (a native writer), fsync, fsync-dir, rename, remove, "
                             "mkdir, rmdir or copy", "path": "relative to the run's folder",
             "who": "the process's role: rank{R}, main (the command's own process) or proc",
             "n": "this event's number among its role's file events (a crash point)", "dst": "a rename's target",
             "folder": "a rename of a folder (what is in it moves with it)",
             "exists": "a mkdir of a folder that was there already (it does nothing)",
             "src": "a copy's source", "shadow": "a hard link to the file the event replaces or removes (power cuts)",
             "size": "an fsync: the file's size", "python_open": "opened by Python code (a torn fault cuts it at "
             "close)", "replaces": "a native write over an existing file"},
    "written": {"path": "relative to the run's folder: a write finished", "ino": "its inode", "size": "its size",
                "mtime_ns": "its modification time", "t": "epoch seconds"},
    "read": {**_WHERE, "path": "a file under the run opened for reading", "file": "{ino, size, mtime_ns}"},
    "seed": {**_WHERE, "which": "python, numpy or torch: an RNG seeded"},
    "restore": {**_WHERE, "which": "python, numpy or torch: an RNG's state set"},
    "sampler": {**_WHERE, "epoch": "a DistributedSampler pass: its epoch", "shuffle": "does it shuffle",
                "seed": "its seed"},
    "loader": {**_WHERE, "workers": "a DataLoader pass begins: its num_workers", "generator": "does it have its own",
               "generator_state": "its generator's state as the pass begins"},
    "fault": {**_WHERE, "mode": "sigkill, sigterm, during-save, during-commit, before, torn, power-data or power-names",
              "at": "the step it was due at (a file event's: the process's step then)",
              "target": "what a cut save was writing, or the rename or copy a during-commit struck",
              "event": "[who, n]: the file event struck", "op": "that event's op"},
    "end": {**_WHERE, "how": "exit or os._exit", "params": "the parameters as the process left",
            "state": "the optimizer state", "buffers": "the model's buffers", "ema": "the averaged model",
            "probe_s": "seconds in the probe"},
}
