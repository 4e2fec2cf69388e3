"""``python -m bench [NAME ...]``: run the benchmarks of stations 1-5 (all, or the named ones),
each in its own process, then render ``BENCHMARKS.md``. ``--report`` only re-renders.
``--list`` shows the names and what each costs on 2 cores."""
import argparse
import subprocess
import sys
import time
from pathlib import Path

from .report import render

BENCH = Path(__file__).resolve().parent
# name -> (script and arguments, rough minutes on 2 cores)
BENCHMARKS = {
    "near_dup": (["near_dup_bench.py"], 1),
    "tokenizer": (["tokenizer_bench.py"], 2),
    "scaling": (["scaling_bench.py"], 16),
    "checkpoint": (["checkpoint_bench.py"], 16),
    "reduction": (["reduction_bench.py"], 5),
    "elastic": (["elastic_bench.py"], 10),
    "start_method": (["start_method_bench.py"], 1),
    "chaos_drill": (["chaos_drill.py"], 6),
    "save_interval": (["save_interval_bench.py"], 95),
    "pipeline": (["pipeline_bench.py"], 3),
    "notebook_times": (["notebook_times.py", "--busy", "--twice"], 75),  # as on a busy class server, Run All twice
    "kit_commands": (["kit_commands.py"], 20),
    "audit_overhead": (["audit_overhead.py"], 10),
    "audit_zoo": (["audit_zoo.py"], 30),
    "scorecard": (["scorecard.py"], 12),  # needs the frameworks extra (pip install -e ".[frameworks]")
    "kit_crashpoints": (["kit_crashpoints.py"], 90),  # the kit's trainer at every crash point of its saves
    "peer_ckpt_chaos": (["peer_ckpt_chaos.py"], 120),  # needs the peer and frameworks extras
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    ap.add_argument("names", nargs="*", metavar="NAME", help=", ".join(BENCHMARKS))
    ap.add_argument("--report", action="store_true", help="only render BENCHMARKS.md from bench/results")
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args(argv)
    unknown = [n for n in a.names if n not in BENCHMARKS]
    if unknown:
        ap.error(f"unknown benchmark(s) {', '.join(unknown)}; choose from {', '.join(BENCHMARKS)}")
    if a.list:
        for name, (cmd, minutes) in BENCHMARKS.items():
            print(f"{name:12s} ~{minutes:2d} min  python bench/{' '.join(cmd)}")
        return 0
    failed = []
    for name in ([] if a.report else a.names or list(BENCHMARKS)):
        cmd, _ = BENCHMARKS[name]
        print(f"== {name}: python bench/{' '.join(cmd)}", flush=True)
        t0 = time.perf_counter()
        if subprocess.run([sys.executable, str(BENCH / cmd[0]), *cmd[1:]], cwd=BENCH.parent).returncode:
            failed.append(name)
        print(f"== {name}: {time.perf_counter() - t0:.0f} s", flush=True)
    print(f"rendered {render()}")
    if failed:
        print(f"FAILED: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
