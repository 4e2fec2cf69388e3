"""Uninterrupted runs trained once per settings: the cache (course_lib.lab.references) and the
drills' ``ensure_reference`` on real runs."""
import json
from pathlib import Path

import pytest
from helpers import small_cfg

from course_lib.lab import references
from course_lib.lab.drills import ensure_reference
from course_lib.paths import read_config
from course_lib.watch.compare import compare_runs


def _fake_run(run_dir: Path, value: str) -> None:
    (run_dir / "final").mkdir(parents=True)
    (run_dir / "final" / "summary.json").write_text(json.dumps({"value": value}))
    (run_dir / ".lock").write_text("pid 1")


def test_a_run_is_trained_once_per_settings_and_copied_after(tmp_path):
    made = []

    def train(run_dir, value):
        made.append(value)
        _fake_run(run_dir, value)

    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    assert references.reuse(a, {"epochs": 2}, lambda: train(a, "first"), root=tmp_path / "cache") is False
    assert references.reuse(b, {"epochs": 2}, lambda: train(b, "again"), root=tmp_path / "cache") is True
    assert references.reuse(c, {"epochs": 3}, lambda: train(c, "other"), root=tmp_path / "cache") is False
    assert made == ["first", "other"]
    assert json.loads((b / "final" / "summary.json").read_text()) == {"value": "first"}
    assert not list((tmp_path / "cache" / "references").glob(".tmp-*"))
    assert not (tmp_path / "cache" / "references" / references.key({"epochs": 2}) / ".lock").exists()


def test_an_unfinished_run_is_not_cached(tmp_path):
    def crash():
        (tmp_path / "a" / "checkpoints").mkdir(parents=True)  # killed before final/summary.json

    assert references.reuse(tmp_path / "a", {"k": 1}, crash, root=tmp_path / "cache") is False
    assert not (tmp_path / "cache" / "references" / references.key({"k": 1})).exists()


def test_a_cache_that_cannot_be_written_costs_a_warning_not_the_run(tmp_path):
    (tmp_path / "cache").write_text("a file where the cache folder should be")
    with pytest.warns(UserWarning, match="could not keep the reference run"):
        assert references.reuse(tmp_path / "a", {"k": 1}, lambda: _fake_run(tmp_path / "a", "x"),
                                root=tmp_path / "cache") is False
    assert (tmp_path / "a" / "final" / "summary.json").is_file()


def test_the_key_follows_the_settings_and_the_code(monkeypatch):
    assert references.key({"a": 1, "b": 2}) == references.key({"b": 2, "a": 1})
    assert references.key({"a": 1}) != references.key({"a": 2})
    before = references.key({"a": 1})
    monkeypatch.setattr(references, "code_digest", lambda: "another version of the kit")
    assert references.key({"a": 1}) != before


def test_the_cache_keeps_the_most_recently_used(tmp_path, monkeypatch):
    monkeypatch.setattr(references, "BUDGET", 2 * len(json.dumps({"value": "0"})))  # room for two runs
    for i in range(3):
        references.reuse(tmp_path / f"r{i}", {"i": i}, lambda i=i: _fake_run(tmp_path / f"r{i}", str(i)), root=tmp_path)
    kept = sorted(p.name for p in (tmp_path / "references").iterdir())
    assert kept == sorted(references.key({"i": i}) for i in (1, 2))


@pytest.mark.slow
def test_a_copied_reference_is_the_trained_one_and_other_settings_train_again(tmp_path):
    cfg = small_cfg(tmp_path / "a", max_steps=8)
    ensure_reference(cfg)
    ensure_reference(cfg.replace(run_dir=str(tmp_path / "b")))  # from the cache
    assert read_config(tmp_path / "b").run_dir == str(tmp_path / "b")
    assert compare_runs(tmp_path / "a", tmp_path / "b")["identical"]
    # a finished run of other settings in the folder (a notebook rerun after a parameter changed)
    ensure_reference(cfg.replace(run_dir=str(tmp_path / "b"), max_steps=6))
    assert compare_runs(tmp_path / "a", tmp_path / "b")["steps_b"] == 6
