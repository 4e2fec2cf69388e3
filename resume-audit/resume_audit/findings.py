"""The audit's findings: what went wrong, in one line each, and the fix in the chapter's terms.

Every finding has a ``kind`` (the state or habit at fault), a line made from a template and the
run's numbers, and the fix; :data:`KINDS` is the order a person fixes things in. Five classes,
kept apart: a *defect* makes the resumed run another run; *lost work* (:data:`LOST`) leaves it
the same run, steps trained again; *not durable* (:data:`DURABILITY`): a checkpoint that survives
every process kill is lost to a power cut; *unseen* (:data:`UNSEEN`): something the audit could
not see or deliver, so the verdict cannot claim it (inconclusive); a *note* (:data:`NOTES`) says
something about the run that is not wrong (docs/audit.md, "The verdicts"). The templates are English
module data (:data:`KINDS`, :data:`FAULTS`, :data:`RNG_NAMES`, :data:`UNDONE`): a view in another language
words these same templates, and a finding keeps its facts as data for it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

RNG_NAMES = {"python": "Python's RNG (random)", "numpy": "NumPy's global RNG", "torch": "torch's CPU RNG",
             "cuda": "CUDA's RNG"}
SAVE_RNG = ("save torch.get_rng_state() (and random.getstate(), np.random.get_state(), CUDA's) of every rank "
            "with the checkpoint and restore them before the next step")
POSITION = "save the position within the epoch (the step) with the checkpoint and skip the batches already trained"
ATOMIC = ("write the checkpoint to a temporary file, fsync it, then os.replace it over the old one (the previous "
          "checkpoint stays valid until the new one is complete)")
ORDER = ("restore the shuffle: a DataLoader generator's state (generator.get_state()), or sampler.set_epoch(epoch) "
         "with the resumed epoch")
SIGTERM = "on SIGTERM set a flag; at the end of the step save a checkpoint and exit"
SNAPSHOT = ("hand a background save a snapshot (every tensor of the model's and the optimizer's state_dict() "
            "cloned, e.g. copy.deepcopy), or save on the training thread")
FSYNC_FILE = ("fsync every file of a checkpoint (f.flush(); os.fsync(f.fileno())) before it is renamed into place, "
              "then fsync its folder")
FSYNC_DIR = ("fsync the folder after the rename that puts a checkpoint in place (fd = os.open(folder, os.O_RDONLY); "
             "os.fsync(fd); os.close(fd))")
DETERMINISTIC = "torch.use_deterministic_algorithms(True), a fixed number of threads, seeded data workers"

# kind -> (line template, fix); in the order a person fixes them
KINDS = {
    # (a) is the script deterministic at all?
    "unseeded-init": ("parameters differ before the first step between two runs never interrupted: the model's "
                      "initialisation is not seeded", "call torch.manual_seed(seed) before building the model"),
    "unseeded-data": ("the batches of step {step} differ between two runs never interrupted: the data set or its "
                      "order is not seeded", "seed what builds and shuffles the data (torch.manual_seed, random.seed, "
                      "np.random.seed, or a seeded DataLoader generator)"),
    "unseeded-rng": ("the state of {rngs} differs at step {step} between two runs never interrupted, with the same "
                     "parameters and batches", "seed every RNG a step draws from when the run starts"),
    "unseeded-workers": ("the batches of step {step} differ between two runs never interrupted, and they come from "
                         "{workers} DataLoader workers: the workers' randomness is not seeded",
                         "seed what a worker draws from in worker_init_fn from torch.initial_seed() (torch seeds each "
                         "worker's random and NumPy global RNG, not a generator of your own), and give the DataLoader "
                         "a seeded generator"),
    "nondeterministic": ("{what} of step {step} differ between two runs never interrupted, with the same parameters, "
                         "batches and RNGs: the computation is not deterministic", DETERMINISTIC),
    "nondeterministic-cuda": ("{what} of step {step} differ between two runs never interrupted, with the same "
                              "parameters, batches and RNGs, on CUDA: its kernels are not deterministic by default",
                              "set CUBLAS_WORKSPACE_CONFIG=:4096:8 before CUDA starts, torch.use_deterministic_algorithms"
                              "(True) and torch.backends.cudnn.benchmark = False; seed the data workers"),
    "runs-differ": ("{what}", "make two runs of the same command the same run before auditing resumes"),
    # a habit the reference run shows
    "set-epoch": ("the DistributedSampler draws the same order in every epoch (epoch {epoch} in all {passes} passes "
                  "on rank {rank}): set_epoch is never called", "call sampler.set_epoch(epoch) at the start of each "
                  "epoch"),
    "sampler-seed": ("the DistributedSampler's seed differs between ranks ({seeds}): each rank shuffles another "
                     "permutation, so their shares overlap and some samples are never trained in an epoch",
                     "give every rank's DistributedSampler the same seed (the run's), not one derived from the rank"),
    # (b) does it start again, and from where?
    "not-atomic": ("after {fault}, the resumed run did not start ({error}): the checkpoint a crash cut half-way "
                   "was the one it read", ATOMIC),
    "not-atomic-read": ("after {fault}, the resumed run could not read {target} ({error}): the checkpoint a crash cut "
                        "half-way was the one it needed", ATOMIC),
    "not-atomic-lost": ("after {fault}, the resumed run went on from step {resumed}, not from the checkpoint of step "
                        "{newest}: the crash struck while the save replaced it, and left neither ({lost} steps lost)",
                        ATOMIC),
    "did-not-start": ("after {fault}, the resumed run did not start: {error}", "make the resume read only "
                      "complete checkpoints, and fix the error above"),
    "hung": ("{fault}: the run did not end within {seconds:.0f} s and was killed (a rank waiting for a dead "
             "peer?)", "let every rank fail when a peer is lost (a collective's timeout), so the launcher can "
             "restart the job"),
    "started-over": ("after {fault}, the resumed run started again from step 0 although the checkpoint of step "
                     "{newest} was complete: no checkpoint was loaded ({lost} steps lost)",
                     "load the newest checkpoint when the run starts"),
    "older": ("after {fault}, the resumed run went on from step {resumed}, although the checkpoint of step {newest} was "
              "on disk, intact: the resume did not take the newest checkpoint ({lost} steps lost)", "resume from the "
              "newest complete checkpoint, whichever file holds it (by step number, not by file name: 'step-9' sorts "
              "after 'step-18'; a save made on SIGTERM included)"),
    "unaligned": ("after {fault}, the parameters the resumed run started from are no state of the "
                  "uninterrupted run", "load the model's state_dict from this run's checkpoint"),
    "sigterm-no-save": ("{fault} (a scheduler's preemption): the script stopped without saving; the resume went "
                        "on from step {resumed} ({lost} steps lost)", SIGTERM),
    "sigterm-ignored": ("{fault}: the script was still running {grace:.0f} s later and was killed; the resume went on "
                        "from step {resumed} ({lost} steps lost)", SIGTERM),
    # (c) at the resume point
    "snapshot": ("after {fault}, the checkpoint the resume read was written by a background save ({thread}) from the "
                 "live model and optimizer while training went on: it holds the state of later steps beside the step "
                 "it was asked for, so the resumed run parted at step {step}", SNAPSHOT),
    "snapshot-mix": ("after {fault}, the resumed run started from the parameters of step {params} beside the optimizer "
                     "state of step {state}: the checkpoint is no snapshot of one step", SNAPSHOT),
    "optimizer": ("after {fault}, the optimizer state at the resume (step {resumed}) differs from the uninterrupted "
                  "run's", "save optimizer.state_dict() with the model and load it back (the chapter's second item)"),
    "scheduler": ("after {fault}, step {step} used learning rate {ours} where the uninterrupted run used {theirs}",
                  "save the LR scheduler's state_dict() with the checkpoint and load it back"),
    "scheduler-offset": ("after {fault}, step {step} used learning rate {ours}, the uninterrupted run's rate from step "
                         "{then} on: the schedule was put ahead of where it was (a scheduler stepped per epoch, "
                         "fast-forwarded by steps)", "save and load the scheduler's state_dict(); if you fast-forward it, "
                         "step it as many times as it was stepped (epochs for a per-epoch schedule)"),
    "scaler": ("after {fault}, step {step} used the GradScaler's scale {ours} where the uninterrupted run used {theirs}: "
               "its state was not saved (the scale decides which steps overflow and are skipped)",
               "save scaler.state_dict() with the checkpoint and load it back"),
    "hyper": ("after {fault}, the optimizer's settings (other than the learning rate) differ at step {step}",
              "restore the optimizer with load_state_dict, param groups included"),
    "rng": ("after {fault}, the state of {rngs} differs at the first step after the resume (rank {ranks}): it was "
            "never restored", SAVE_RNG),
    "rng-reseeded": ("after {fault}, the state of {rngs} differs at the first step after the resume (rank {ranks}): "
                     "it was seeded again after the checkpoint was loaded, instead of restored",
                     "restore the saved RNG state (torch.set_rng_state) instead of seeding again"),
    "rng-drawn": ("after {fault}, the state of {rngs} differs at the first step after the resume (rank {ranks}): it "
                  "was restored, then drew again before the step (a DataLoader iterator draws one number from "
                  "torch's RNG when it is created)", "restore the RNG last, right before the next step, or give the "
                  "DataLoader a generator of its own"),
    "rng-shuffle": ("after {fault}, the state of torch's CPU RNG differs at the first step after the resume (rank "
                    "{ranks}), and so does the batch: the RNG was never restored, and the DataLoader, which has no "
                    "generator of its own, draws its shuffle from it", "save torch.get_rng_state() with the checkpoint "
                    "and restore it before the epoch's DataLoader iterator is created (or give the DataLoader a "
                    "generator of its own and save its state)"),
    "rng-rank": ("after {fault}, the state of {rngs} differs on rank {bad} and matches on rank {good}: not every "
                 "rank's RNG was saved and restored", "save and restore every rank's RNG state, each rank its own"),
    "accumulation": ("after {fault}, the resumed run went on from the checkpoint of step {resumed}, saved after {pending} "
                     "backward pass(es) of step {step} had been accumulated: their gradients are lost, and step {step} "
                     "accumulated other micro-batches than the uninterrupted run's", "save at an optimizer step's end "
                     "(after optimizer.step() and zero_grad()), or save the accumulation counter with the checkpoint "
                     "and the gradients accumulated so far"),
    "position": ("after {fault}, the resumed run went back to the start of its epoch: step {step} trained the batch "
                 "of step {other} again ({n} step(s) repeated)", POSITION),
    "epoch": ("after {fault}, the resumed run trains the epoch it had finished again: step {step} trained the batch "
              "of step {other}, one epoch ({n} steps) back", "the saved epoch is the one just finished: resume "
              "from the next one (epoch + 1)"),
    "skip": ("after {fault}, the resumed run skipped the batches of {n} step(s): step {step} trained the batch of step "
             "{other}", POSITION),
    "order-generator": ("after {fault}, step {step} trained another batch than the uninterrupted run's: the "
                        "DataLoader's generator was in another state as the pass began (it was not restored)",
                        "save the DataLoader generator's state (generator.get_state()) with the checkpoint and restore "
                        "it (set_state) before the pass resumes, or seed it from the epoch"),
    "order": ("after {fault}, step {step} trained another batch than the uninterrupted run's, while every RNG the audit "
              "sees matched: the data order was not restored", ORDER),
    "order-sampler": ("after {fault}, step {step} trained another batch than the uninterrupted run's (its "
                      "DistributedSampler was at epoch {ours}, the uninterrupted run's at epoch {theirs}): the data "
                      "order was not restored", ORDER),
    "buffers": ("after {fault}, the model's buffers (BatchNorm's running statistics, any registered buffer) at step "
                "{step} differ from the uninterrupted run's while its parameters, optimizer state and batches match: "
                "they were not restored", "save model.state_dict() (it holds the buffers), not only the parameters, "
                "and load it with strict=True"),
    # (d) where it parted later
    "data-unseen": ("after {fault}, the gradients of step {step} differ while parameters, optimizer state, learning "
                    "rate and RNGs match: the data order or the position in the epoch (the audit saw no DataLoader)",
                    POSITION + "; restore the data order"),
    "unseen": ("after {fault}, {what} of step {step} differ while parameters, buffers, optimizer state, learning rate, "
               "RNGs and batches match: state the audit cannot see (a generator of the script's own, a counter) or a "
               "nondeterministic kernel", "save every piece of state a step reads (a generator's get_state())"),
    "ema": ("after {fault}, the averaged model (EMA/SWA) at step {step} differs from the uninterrupted run's while the "
            "trained parameters match: it was not saved and restored", "save the averaged model's state_dict() "
            "(n_averaged included) with the checkpoint and load it back"),
    # (e) the end
    "steps": ("after {fault}, the resumed run took {ours} steps in all, the uninterrupted one {theirs}",
              "resume at the step after the one saved, and end where the uninterrupted run ends"),
    "final": ("after {fault}, the final parameters differ from the uninterrupted run's", "see the lines above"),
    "crashed": ("after {fault}, the resumed run ended with exit code {code}: {error}", "fix the error above"),
    "teardown": ("after {fault}, the resumed run trained every step and ended bit-identical, then a process died as "
                 "its interpreter shut down (exit code {code}: {error}): not a resume defect, but the job reads as "
                 "failed", "leave each process through os._exit(0) once destroy_process_group() has returned: a "
                 "thread of the process group still running at shutdown aborts the process (pytorch/pytorch#179291)"),
    # (f) durability: what survives every process kill but not a power cut
    "unsynced-file": ("after {fault}, the checkpoint of step {newest} was lost: what was written since the last fsync "
                      "of {files} is what a power cut takes back (the resume went on from step {resumed}, {lost} steps "
                      "lost)", FSYNC_FILE),
    "unsynced-file-read": ("after {fault}, the resumed run did not start ({error}): what was written since the last "
                           "fsync of {files} is what a power cut takes back", FSYNC_FILE),
    "unsynced-dir": ("after {fault}, the checkpoint of step {newest} was lost: no fsync of its folder followed {names}, "
                     "so a power cut undoes it (the resume went on from step {resumed}, {lost} steps lost)", FSYNC_DIR),
    "unsynced-dir-read": ("after {fault}, the resumed run did not start ({error}): no fsync of its folder followed "
                          "{names}, so a power cut undid it", FSYNC_DIR),
    # (g) what the audit could not see or do: the verdict cannot claim it
    "unseen-write": ("the audit did not see what wrote {files} under the run's folder (not Python code, torch.save, "
                     "safetensors, pickle or NumPy: another program, or a library's native code), so it could not cut "
                     "those writes nor tell what a power cut takes back of them", "write checkpoints from Python, or "
                     "audit the writer itself; until then this verdict does not cover those files"),
    "undelivered-no-step": ("{fault} was not delivered: the attempt took no step (exit code {code})", ""),
    "undelivered-no-save": ("{fault} was not delivered: rank {rank} made no save after step {at} in that attempt", ""),
    "undelivered-no-commit": ("{fault} was not delivered: rank {rank} renamed or copied no file after its save of "
                              "step {at}", ""),
    "undelivered-ended": ("{fault} was not delivered: the attempt ended at step {reached} (exit code {code})", ""),
    "undelivered-no-event": ("{fault} was not delivered: the run never interrupted made no such file event, or this "
                             "run did not reach it", ""),
    # notes: nothing wrong with the script
    "rng-unused": ("the state of {rngs} differed after a resume, but nothing drew from it: the run stayed exact", ""),
}
UNSEEN = ("unseen-write", "undelivered-no-step", "undelivered-no-save", "undelivered-no-commit", "undelivered-ended",
          "undelivered-no-event")
NOTES = ("rng-unused", "teardown")
HABITS = ("set-epoch", "sampler-seed")  # seen in the uninterrupted run itself, whatever the faults
LOST = ("sigterm-no-save", "sigterm-ignored", "started-over", "older", "not-atomic-lost")  # the same run, steps lost
DURABILITY = ("unsynced-file", "unsynced-file-read", "unsynced-dir", "unsynced-dir-read")  # lost to a power cut only


@dataclass
class Finding:
    """One finding: its kind and the numbers of its line. Two values are data, not text, so that
    a view can say them in another language: ``fault`` (the fault after which it was seen, as
    :meth:`Fault.for_report` gives it) and ``rngs`` (the RNGs, ``["rng.torch", ...]``)."""
    kind: str
    values: dict = field(default_factory=dict)
    count: int = 1  # faults it was seen after
    total_lost: int | None = None  # lost work merged over those faults (its line keeps the first one's numbers)

    @property
    def line(self) -> str:
        return self.render(KINDS[self.kind][0], describe_fault, rng_list, undone_list)

    def render(self, template: str, fault_text, rngs_text, names_text=None) -> str:
        """``template`` filled with this finding's values, the ones kept as data said by the
        functions: the fault, the RNGs, the file names a power cut undid (a list of operations)."""
        values = dict(self.values)
        if isinstance(values.get("fault"), dict):
            values["fault"] = fault_text(values["fault"])
        if isinstance(values.get("rngs"), list):
            values["rngs"] = rngs_text(values["rngs"])
        if isinstance(values.get("names"), list):
            values["names"] = (names_text or undone_list)(values["names"])
        if isinstance(values.get("files"), list):
            values["files"] = _some(values["files"])
        return template.format(**values)

    @property
    def fix(self) -> str:
        return KINDS[self.kind][1]

    @property
    def defect(self) -> bool:
        """Does it make the resumed run another run (not a note, lost work, a power cut's loss, or unseen)?"""
        return self.kind not in NOTES + LOST + DURABILITY + UNSEEN

    @property
    def kind_class(self) -> str:
        """``defect``, ``lost work``, ``not durable``, ``unseen`` or ``note``."""
        return ("lost work" if self.kind in LOST else "not durable" if self.kind in DURABILITY else
                "unseen" if self.kind in UNSEEN else "note" if self.kind in NOTES else "defect")

    @property
    def lost(self) -> int:
        """Steps it cost (lost work; 0 for the other classes)."""
        if self.kind not in LOST:
            return 0
        return self.total_lost if self.total_lost is not None else int(self.values.get("lost", 0))

    def to_dict(self) -> dict:
        return {"kind": self.kind, "class": self.kind_class, "line": self.line, "fix": self.fix, "defect": self.defect,
                "lost_work": self.kind in LOST, "steps_lost": self.lost, "count": self.count, "values": self.values}


# a fault, as describe_fault says it: module data, so that a view in another language words the same templates
EVENT = "{who}'s file event {n} ({op} {path}, step {at})"
FAULTS = {"sigkill": "SIGKILL {who} at step {at}", "sigterm": "SIGTERM {who} at step {at}",
          "during-save": "SIGKILL {who} half-way through the save after step {at}",
          "during-commit": "SIGKILL {who} as the save after step {at} was put in place (its rename or copy)",
          "after-save": "SIGKILL {who} at step {at}, just after the save of step {prev}",
          "before": f"SIGKILL just before {EVENT}", "torn": f"SIGKILL with the file of {EVENT} half written",
          "power-data": f"a power cut just before {EVENT}, the data not fsynced lost",
          "power-names": f"a power cut just before {EVENT}, the renames and creates not fsynced undone"}
EVERY_RANK, ONE_RANK = "every rank", "rank {rank}"


def describe_fault(fault: dict) -> str:
    """A fault (``kind``, ``at``, ``rank``; a file event's ``who``, ``n``, ``op``, ``path``), said as the report
    says it: its template of :data:`FAULTS`, its rank one of :data:`EVERY_RANK`, :data:`ONE_RANK` (a file event:
    its role)."""
    who = fault["who"] if "who" in fault else EVERY_RANK if fault["rank"] is None else ONE_RANK.format(rank=fault["rank"])
    return FAULTS[fault["kind"]].format(who=who, at=fault["at"], prev=fault["at"] - 1, n=fault.get("n"),
                                        op=fault.get("op"), path=fault.get("path"))


UNDONE = {"create": "the creation of {0}", "rename": "the rename of {0} to {1}", "remove": "the removal of {0}",
          "mkdir": "the creation of the folder {0}", "rmdir": "the removal of the folder {0}"}
MORE = " (and {n} more)"  # after the two said


def undone_list(ops: list, said: dict = UNDONE, more: str = MORE) -> str:
    """What a power cut undid (``[op, path, ...]`` each), the newest first, at most two said."""
    words = [said[op[0]].format(*op[1:]) for op in ops[:2]]
    return ", ".join(words) + (more.format(n=len(ops) - 2) if len(ops) > 2 else "") or "?"


def _some(files: list) -> str:
    return ", ".join(files[:3]) + (f" (+{len(files) - 3})" if len(files) > 3 else "") or "?"


def rng_list(names) -> str:
    names = [RNG_NAMES.get(n.removeprefix("rng."), n) for n in names]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def merge(findings: list[Finding]) -> list[Finding]:
    """One finding per kind (the first one's numbers, how many faults showed it), in fixing order.
    A script that loses its place in the epoch, saved at an epoch's last step, trains that epoch
    again: with ``position`` found too, an ``epoch`` finding is that same loss, counted with it."""
    merged: dict[str, Finding] = {}
    for f in findings:
        if f.kind in merged:
            merged[f.kind].count += f.count
            merged[f.kind].total_lost = merged[f.kind].lost + f.lost
        else:
            merged[f.kind] = Finding(f.kind, dict(f.values), f.count, f.lost)
    if "position" in merged and "epoch" in merged:
        merged["position"].count += merged.pop("epoch").count
    order = list(KINDS)
    return sorted(merged.values(), key=lambda f: order.index(f.kind))
