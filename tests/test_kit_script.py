"""kit.py's decisions, without installing anything: which torch, when to set up again, what runs."""
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def load_kit():
    spec = importlib.util.spec_from_file_location("kit_script", ROOT / "kit.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


kit = load_kit()


def test_linux_without_gpu_takes_the_cpu_index_where_it_resolves():
    assert kit.torch_pip_args("Linux", gpu=False, index_resolves=True) == [
        "torch==2.13.0", "--extra-index-url", "https://download.pytorch.org/whl/cpu"]


def test_linux_without_gpu_and_no_index_accepts_only_a_cpu_wheel():
    # no extra index (pip would retry it 5 times a package), and never PyPI's CUDA build
    assert kit.torch_pip_args("Linux", gpu=False, index_resolves=False) == ["torch==2.13.0+cpu"]


@pytest.mark.parametrize("resolves", [True, False])
def test_a_gpu_gets_the_default_build(resolves):
    assert kit.torch_pip_args("Linux", gpu=True, index_resolves=resolves) == ["torch==2.13.0"]


@pytest.mark.parametrize("system", ["Darwin", "Windows"])
def test_macos_and_windows_take_pypi_whose_wheels_are_cpu_builds(system):
    assert kit.torch_pip_args(system, gpu=False, index_resolves=True) == ["torch==2.13.0"]


def test_the_stamp_skips_a_second_install(tmp_path):
    python = tmp_path / "python"
    python.touch()
    stamp = tmp_path / "kit-installed.txt"
    key = kit.stamp_key(b"[project]\n", gpu=False)
    assert not kit.is_set_up(stamp, key, python)
    stamp.write_text(f"{key}\n2.13.0+cpu CPU\n")
    assert kit.is_set_up(stamp, key, python)
    assert not kit.is_set_up(stamp, key, tmp_path / "gone")  # .venv's Python deleted


def test_the_stamp_follows_pyproject_and_the_torch_build():
    key = kit.stamp_key(b"[project]\n", gpu=False)
    assert key == kit.stamp_key(b"[project]\n", gpu=False)
    assert key != kit.stamp_key(b"[project]\nx = 1\n", gpu=False)
    assert key != kit.stamp_key(b"[project]\n", gpu=True)


@pytest.mark.parametrize("argv, expected", [
    ([], ("pipeline", [])),
    (["--quick"], ("pipeline", ["--quick"])),
    (["pipeline", "--quick", "--no-interrupt"], ("pipeline", ["--quick", "--no-interrupt"])),
    (["test"], ("test", [])),
    (["test", "-m", "", "-k", "resume"], ("test", ["-m", "", "-k", "resume"])),
    (["setup"], ("setup", [])),
    (["--help"], ("help", [])),
])
def test_arguments_pass_through(argv, expected):
    assert kit.parse(argv) == expected


def test_the_jobs_run_with_the_environments_python():
    assert kit.job("test", "PY", ["-m", ""]) == ["PY", "-m", "pytest", "-m", ""]
    assert kit.job("pipeline", "PY", ["--quick"]) == ["PY", "-m", "course_lib", "pipeline", "--quick"]


def test_too_old_a_python_is_one_line():
    message = kit.python_problem((3, 9, 18), "/usr/bin/python3")
    assert message.startswith("the kit needs Python >= 3.10; this is 3.9.18 (/usr/bin/python3)")
    assert "\n" not in message
    assert kit.python_problem((3, 10, 0), "python3") == ""

