"""The GPU check: the kit's own path on NVIDIA GPU(s), in one prepared run (minutes on one GPU).

    python bench/gpu_check.py              on a machine with CUDA GPUs: writes bench/results/gpu_check.json
    python bench/gpu_check.py --dry-run    the same steps on this CPU, tiny, to a folder of its own (a test runs it)

1. NCCL at world size = the number of GPUs (gloo on the CPU);
2. ``minilm`` fine-tuned on the IMDB train split with bf16 autocast: samples/s and held-out accuracy;
3. kills on the GPU (a SIGKILL as a step begins, a SIGKILL half-way through a save), each followed
   by ``--resume auto``, with deterministic kernels (``--deterministic``: ``CUBLAS_WORKSPACE_CONFIG``
   and ``torch.use_deterministic_algorithms``), compared bit for bit with the same run never
   interrupted (``compare``);
4. what a checkpoint costs there: its size, the seconds a save blocks training, the seconds it takes.

Each rank's CUDA RNG is its own device's (``checkpoint.resume.rng_state``).
"""
import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS, machine  # noqa: E402
from gpu_carry import WIDENED_MARK  # noqa: E402

from course_lib.config import TrainConfig  # noqa: E402
from course_lib.ddp.launch import RunInterrupted, choose_backend, choose_device, launch  # noqa: E402
from course_lib.watch.compare import compare_runs  # noqa: E402
from course_lib.watch.monitor import read_scalars  # noqa: E402

KILLS = ([70, 140], ["sigkill", "during-save"])  # a step of the small run's, and a save after a later one


def settings(dry_run: bool, gpus: int, work: Path) -> tuple[dict, dict]:
    """The full run's settings and the small one's (the killed run and its reference)."""
    if dry_run:  # the same steps on this CPU, a few seconds each
        base = dict(model="bag", embed_dim=8, device="cpu", world_size=2, global_batch_size=16, max_length=128,
                    epochs=2, save_every_steps=4, log_every=1000, deterministic=True, cache_dir=str(work / "cache"))
        return {**base, "train_limit": 320}, {**base, "train_limit": 320}
    base = dict(model="minilm", device="cuda", precision="bf16", world_size=gpus, global_batch_size=32 * gpus,
                max_length=256, lr=3e-5, warmup_steps=30, epochs=1, save_every_steps=50, log_every=100,
                deterministic=True, cache_dir=str(work / "cache"))
    return base, {**base, "train_limit": 6000}


def median(run_dir: Path, tag: str, skip: int = 0) -> float | None:
    values = [v for step, v in read_scalars(run_dir).get(tag, []) if step > skip]
    return statistics.median(values) if values else None


def killed_and_resumed(small: dict, run_dir: Path, steps: list[int]) -> list[str]:
    """The small run killed at ``steps`` (one kill per attempt), resumed after each: how each attempt ended."""
    cfg = TrainConfig(run_dir=str(run_dir), **small, kill_at_step=steps, kill_mode=KILLS[1][: len(steps)],
                      resume="auto")
    ends = []
    for _ in range(len(steps) + 1):
        try:
            launch(cfg, quiet=True)
            return [*ends, "done"]
        except RunInterrupted as err:
            ends.append(str(err).split(";")[0])
    raise RuntimeError(f"the killed run did not finish after {len(steps)} resumes: {ends}")


def minilm_weights() -> str:
    """Which MiniLM weights the run loads: the published fp32 ones, or those widened from the fp16
    copy that travelled to a lent GPU machine (bench/gpu_carry.py marks them)."""
    from safetensors import safe_open

    from course_lib.data.tokenization import minilm_dir

    with safe_open(str(minilm_dir() / "model.safetensors"), "pt") as f:
        return (f.metadata() or {}).get(WIDENED_MARK, "the published fp32 weights")


def main(argv=None) -> dict:
    """Run the check's stages in order; after each, ``gpu_check.json`` holds what is measured so
    far, and a stage that fails is named in it (``failed``) before the error is raised: on a lent
    machine's one call, what ran still comes back."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dry-run", action="store_true", help="the same steps on the CPU, tiny (no GPU needed)")
    ap.add_argument("--out", type=Path, help="where gpu_check.json goes (default bench/results; a dry run: a temp folder)")
    a = ap.parse_args(argv)
    gpus = torch.cuda.device_count()
    if not gpus and not a.dry_run:
        raise SystemExit("no CUDA GPU visible: run this on a machine with NVIDIA GPU(s), or --dry-run on the CPU")
    out = a.out or (Path(tempfile.mkdtemp(prefix="gpu-check-dry-")) if a.dry_run else RESULTS)
    out.mkdir(parents=True, exist_ok=True)
    result = {"dry_run": a.dry_run, "machine": {**machine(), "gpus": [torch.cuda.get_device_name(i) for i in range(gpus)]}}

    def record(said: str, **measured) -> None:
        result.update(measured)
        (out / "gpu_check.json").write_text(json.dumps(result, indent=2))
        print(f"[gpu_check] {said}", flush=True)

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        full, small = settings(a.dry_run, gpus, work)
        try:
            stage = "the full run"
            cfg = TrainConfig(run_dir=str(work / "full"), **full)
            t0 = time.perf_counter()
            summary = launch(cfg, quiet=True)
            record(f"{stage}: done", backend=choose_backend(cfg, choose_device(cfg, 0)),
                   world_size=summary["world_size"], model=full["model"], precision=full.get("precision", "fp32"),
                   minilm_weights=minilm_weights() if full["model"] == "minilm" else None,
                   val_accuracy=summary["val_accuracy"], val_count=summary["val_count"], steps=summary["steps"],
                   seconds=round(time.perf_counter() - t0, 1),
                   samples_per_s_median=median(work / "full", "train/samples_per_s", 5),
                   checkpoint={"size_mb": median(work / "full", "checkpoint/size_mb"),
                               "blocking_seconds": median(work / "full", "checkpoint/blocking_seconds"),
                               "save_seconds": median(work / "full", "checkpoint/save_seconds")})
            reference = work / "full" if a.dry_run else work / "small"
            if not a.dry_run:
                stage = "the small run never interrupted"
                launch(TrainConfig(run_dir=str(reference), **small), quiet=True)
            stage = "the killed and resumed run"
            steps = [s for s in KILLS[0] if s < summary["steps"]] or [summary["steps"] // 3, 2 * summary["steps"] // 3]
            ends = killed_and_resumed(small, work / "killed", steps)
            same = compare_runs(reference, work / "killed")
            record(f"{stage}: done", kills={"steps": steps, "modes": KILLS[1][: len(steps)], "attempts": ends},
                   resumed_bit_identical=same["identical"], first_divergent_step=same.get("first_divergent_step"))
        except BaseException as err:
            record(f"{stage}: failed", failed=f"{stage}: {type(err).__name__}: {err}"[:2000])
            raise
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
