#!/usr/bin/env bash
# The GPU path, in one prepared script for a machine with NVIDIA GPU(s); under 8 minutes.
#   bash bench/gpu_check.sh            (writes bench/results/gpu_*.json and prints a summary)
# 1. NCCL at world size = number of GPUs; 2. minilm fine-tuned on the IMDB train split with
# bf16 autocast: samples/s and held-out accuracy; 3. one SIGKILL + automatic resume on the GPU,
# compared with `compare` against the uninterrupted run (on GPUs bit-identity is not promised:
# cuDNN/cuBLAS kernels may be non-deterministic; the report says what it found).
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1
N=$(python -c "import torch; print(torch.cuda.device_count())")
[ "$N" -ge 1 ] || { echo "no CUDA GPU visible"; exit 2; }
OUT=${OUT:-bench/results}; mkdir -p "$OUT"; W=$(mktemp -d)
COMMON="--model minilm --device cuda --precision bf16 --world-size $N --global-batch-size $((32*N)) --max-length 256 \
  --lr 3e-5 --warmup-steps 30 --epochs 1 --save-every-steps 100 --log-every 100 --cache-dir $W/cache"
python -c "import torch; print('GPUs:', [torch.cuda.get_device_name(i) for i in range($N)])"
time python -m course_lib train --run-dir $W/ref $COMMON | tail -3
python -m course_lib train --run-dir $W/kill $COMMON --train-limit 6000 --kill-at-step 70 || true
python -m course_lib train --run-dir $W/ref-small $COMMON --train-limit 6000 | tail -1
python -m course_lib train --run-dir $W/kill $COMMON --train-limit 6000 --resume auto | tail -1
python -m course_lib compare $W/ref-small $W/kill | tee $W/compare.txt || true
python - "$W" "$OUT" <<'PY'
import json, statistics, sys
from pathlib import Path
from course_lib.monitor import read_scalars
w, out = Path(sys.argv[1]), Path(sys.argv[2])
s = json.loads((w / "ref" / "final" / "summary.json").read_text())
sps = [v for step, v in read_scalars(w / "ref")["train/samples_per_s"] if step > 5]
sys.path.insert(0, "bench")
from common import machine
import torch
res = {"machine": {**machine(), "gpus": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]},
       "val_accuracy": s["val_accuracy"], "val_count": s["val_count"], "world_size": s["world_size"],
       "samples_per_s_median": statistics.median(sps), "compare_after_kill": (w / "compare.txt").read_text()}
(out / "gpu_check.json").write_text(json.dumps(res, indent=2))
print(json.dumps(res, indent=2))
PY
