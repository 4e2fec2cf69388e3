"""The scorecard: the field's own training scripts (bench/scorecard/, each written as its
framework's documentation teaches it) audited at the audit's default settings (8 faults, 2 a
run, 4 crash points of the file events, seed 0), each verdict set beside what reading the framework's code predicts
(bench/scorecard/README.md). Writes ``bench/results/scorecard.json``.

    python bench/scorecard.py [--python PY] [--only NAME ...]

``--python``: the interpreter that has the frameworks (``pip install -e ".[frameworks]"``, the
optional extra: transformers, accelerate, lightning); the audit runs from this one.
"""
import argparse
import importlib.metadata as md
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import RESULTS, write
from resume_audit import AuditError, audit

HERE = Path(__file__).resolve().parent / "scorecard"
# name -> (framework packages, how it saves and resumes, the predicted verdict, defects the reading predicts)
SCRIPTS = {
    "hf_trainer": (["transformers", "accelerate"], "Trainer(save_steps=10), train(resume_from_checkpoint="
                   "get_last_checkpoint(out)); safetensors + torch.save straight into checkpoint-N",
                   "not exact", {"not-atomic", "did-not-start", "not-atomic-read"}),
    "accelerate_loop": (["accelerate"], "save_state/load_state into checkpoint-N, skip_first_batches",
                        "not exact", {"order", "rng", "not-atomic-read", "not-atomic", "position"}),
    "lightning_fit": (["lightning"], "ModelCheckpoint(every_n_train_steps=10, save_last=True), fit(ckpt_path='last')",
                      "not exact", {"position", "rng", "rng-shuffle", "order"}),  # its checkpoint holds no global RNG
    "dcp_loop": (["torch"], "FSDP2 on 2 ranks, dcp.save/dcp.load into step-N (.metadata last), torchtitan's newest "
                 "(FileSystemWriter fsyncs each file and .metadata before its rename, never the folder)",
                 "not durable", set()),
    "compile_loop": (["torch"], "torch.compile (inductor), atomic torch.save of model, optimizer, scheduler, RNG "
                     "(the file fsynced, its folder never)", "not durable", set()),
    "dataloader_workers": (["torch"], "DataLoader(num_workers=2, seeded generator, worker_init_fn), atomic torch.save "
                           "(the file fsynced, its folder never)", "not durable", set()),
}


def command(python: str, name: str) -> list[str]:
    script = str(HERE / f"{name}.py")
    if name == "dcp_loop":
        return [python, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", script, "--out", "{run}"]
    return [python, script, "--out", "{run}"]


def versions(python: str, packages: list[str]) -> dict:
    code = "import importlib.metadata as m, json, sys; print(json.dumps({p: m.version(p) for p in sys.argv[1:]}))"
    if python == sys.executable:
        return {p: md.version(p) for p in packages}
    return json.loads(subprocess.run([python, "-c", code, *packages], capture_output=True, text=True, check=True).stdout)


SAID = {"exact": "exact", "lost": "exact, lost work", "durable": "not durable", "inconclusive": "inconclusive"}


def judged(report) -> str:
    """The verdict in the predictions' words (a process kill survived but not a power cut: not durable)."""
    return SAID.get(report.verdict_case()[0], "not exact")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--only", nargs="+", choices=list(SCRIPTS))
    a = ap.parse_args()
    saved = RESULTS / "scorecard.json"
    out = json.loads(saved.read_text())["scripts"] if a.only and saved.exists() else {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in a.only or SCRIPTS:
            packages, how, predicted, kinds = SCRIPTS[name]
            t0 = time.perf_counter()
            try:
                report = audit(command(a.python, name), out=Path(tmp) / name, progress=False)
            except AuditError as err:
                out[name] = {"error": str(err)}
                continue
            defects = [f.kind for f in report.findings if f.defect]
            verdict = judged(report)
            out[name] = {"versions": versions(a.python, packages), "saves_and_resumes": how, "predicted": predicted,
                         "verdict": report.verdict, "exit_code": report.exit_code, "faults": report.faults,
                         "lost_steps": report.lost, "findings": defects,
                         "first": next((f.line for f in report.findings if f.defect),
                                       next((f.line for f in report.findings if f.lost), None)),
                         "agrees": verdict == predicted and (not defects or defects[0] in kinds),
                         "seconds": round(time.perf_counter() - t0, 1)}
            print(name, verdict, defects, out[name]["seconds"], "s", flush=True)
    write("scorecard", {"settings": "audit defaults: 8 faults, 2 a run, 4 crash points, seed 0", "scripts": out})


if __name__ == "__main__":
    main()
