"""Shared by the benchmarks: machine info and writing results next to the scripts."""
import json
import os
import platform
import time
from pathlib import Path

import torch

RESULTS = Path(__file__).resolve().parent / "results"


def machine() -> dict:
    return {"cores": os.cpu_count(), "python": platform.python_version(), "torch": torch.__version__,
            "cuda": torch.cuda.is_available(), "date": time.strftime("%Y-%m-%d %H:%M")}


def write(name: str, result: dict) -> Path:
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps({"machine": machine(), **result}, indent=2, default=str))
    print(json.dumps(result, indent=2, default=str))
    return path
