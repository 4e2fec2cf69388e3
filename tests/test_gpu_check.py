"""The GPU check (bench/gpu_check.py), run end to end on the CPU so that it cannot rot between the
sessions that have a GPU: the same launches, kills, resumes, comparison and record, tiny."""
import json

from bench import gpu_check


def test_the_gpu_check_runs_end_to_end_on_the_cpu(tmp_path):
    result = gpu_check.main(["--dry-run", "--out", str(tmp_path)])
    assert result["dry_run"] and result["backend"] == "gloo" and result["world_size"] == 2
    assert result["kills"]["attempts"][-1] == "done" and len(result["kills"]["attempts"]) == 3, result["kills"]
    assert result["resumed_bit_identical"], result
    assert result["checkpoint"]["size_mb"] > 0 and result["samples_per_s_median"] > 0
    assert json.loads((tmp_path / "gpu_check.json").read_text()) == result
