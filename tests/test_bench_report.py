"""BENCHMARKS.md is rendered from the recorded results: every station's targets, measured and
judged, with its plots. (Renders only; the benchmarks themselves are not part of the tests.)"""
from bench import report


def test_report_renders_every_station_from_recorded_results(tmp_path, monkeypatch):
    monkeypatch.setattr(report, "OUT", tmp_path / "BENCHMARKS.md")
    monkeypatch.setattr(report, "PLOTS", tmp_path / "plots")
    results = report.load()
    text = report.render(results).read_text()
    for title, key, _ in report.SECTIONS:
        assert f"## {title}" in text
        if key in results:
            assert (tmp_path / "plots").exists()
    assert "| >= 0.95 |" in text and ">= 89.15%" in text and "all runs, >= 20 kills | **yes**" in text
    assert "Not recorded" in text or "gpu_check" in results


def test_a_missed_target_is_reported_as_missed():
    rows, _ = report.pipeline({"default": {"held_out_accuracy": 0.85, "held_out_reviews": 100, "interruption": None,
                                           "command_seconds": 200, "resumed_from_step": None, "steps": 10},
                               "quick": {"held_out_accuracy": 0.8, "command_seconds": 20}})
    assert [ok for *_, ok in rows[:2]] == [False, False]
