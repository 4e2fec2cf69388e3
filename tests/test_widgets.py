"""The lab driven as a person drives it: set .value, .click(), wait."""
import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

from course_lib.lab.widgets import InterruptionLab  # noqa: E402


@pytest.mark.slow
def test_lab_full_resume_is_identical_then_weights_only_differs(tmp_path):
    lab = InterruptionLab(tmp_path / "lab", train_limit=1200, run_length=20, save_every_steps=5, eval_limit=100, embed_dim=8,
                          advanced=True)
    lab.run_length.value = 20
    lab.kill_step.value = 12
    lab.kill_mode.value = "sigkill"
    lab.resume_mode.value = "full"
    lab.run_button.click()
    lab.wait(240)
    assert lab.error is None, lab.error
    assert lab.result["identical"] and lab.figure is not None
    assert "identical" in lab.status.value and not lab.run_button.disabled
    assert any("IDENTICAL" in o.get("text", "") for o in lab.output.outputs)

    lab.resume_mode.value = "weights-only"  # the reference is reused, only the new run trains
    lab.run_button.click()
    lab.wait(240)
    assert lab.error is None, lab.error
    assert not lab.result["identical"] and lab.result["first_divergent_step"] > 10

    lab.resume_mode.value = "full"
    lab.more_kills.value = "16, 18"  # killed three times, resumed after each
    lab.run_button.click()
    lab.wait(240)
    assert lab.error is None, lab.error
    assert lab.result["identical"] and lab.report_text.count("killed by SIGKILL") == 3, lab.report_text

    lab.more_kills.value = ""
    lab.reduction.value = "invariant"  # a node lost for good: killed on 2 ranks, resumed on 1, still exact
    lab.resume_on.value = 1
    lab.run_button.click()
    lab.wait(240)
    assert lab.error is None, lab.error
    assert lab.result["identical"], lab.report_text


def _controls(box) -> list:
    """Every control a person can touch in ``box``, depth first."""
    import ipywidgets as W

    found = []
    for child in getattr(box, "children", ()):
        if isinstance(child, (W.Box,)):
            found += _controls(child)
        elif isinstance(child, (W.Button, W.IntSlider, W.Dropdown, W.Text)):
            found.append(child)
    return found


def test_the_core_lab_offers_the_chapters_controls_only_and_runs_as_long_as_it_says(tmp_path):
    """On the core path: kill step, kill mode, resume mode, Run; the rest only with advanced=True. The
    run it trains has the length it shows, on few reviews too (1,200 reviews: 15 steps an epoch)."""
    lab = InterruptionLab(tmp_path / "lab", train_limit=1200, run_length=40, embed_dim=8, lang="en")
    assert _controls(lab.widget) == [lab.kill_step, lab.kill_mode, lab.resume_mode, lab.run_button]
    assert "a run of 40 steps with DDP on 2 ranks" in lab.length_note.value
    cfg = lab.config("x")
    assert lab.steps_per_epoch == 15 and cfg.planned_steps(lab.steps_per_epoch) == 40 == lab.kill_step.max
    assert cfg.reduction == "ddp" and cfg.world_size == 2
    advanced = InterruptionLab(tmp_path / "lab", train_limit=1200, embed_dim=8, advanced=True)
    assert {advanced.reduction, advanced.world_size, advanced.resume_on, advanced.more_kills, advanced.run_length,
            advanced.kill_button} <= set(_controls(advanced.widget))


def test_run_length_bounds_the_kill_slider(tmp_path):
    lab = InterruptionLab(tmp_path / "lab", train_limit=1200, advanced=True)
    lab.kill_step.value = 40
    lab.run_length.value = 20
    assert lab.kill_step.max == 20 and lab.kill_step.value == 20
    lab.kill_button.click()  # nothing running: a no-op, not an error


@pytest.mark.slow
def test_kill_now_button_sends_a_real_sigkill(tmp_path):
    import time

    lab = InterruptionLab(tmp_path / "lab", train_limit=1200, run_length=30, save_every_steps=5, eval_limit=100, embed_dim=8,
                          advanced=True)
    lab.kill_step.value = 30  # the scheduled kill would come last: the button must strike first
    lab.run_button.click()
    deadline = time.time() + 120
    while not (lab.progress.description == "interrupted run" and lab._pids) and time.time() < deadline:
        time.sleep(0.2)
    assert not lab.kill_button.disabled
    lab.kill_button.click()
    assert "SIGKILL" in lab.status.value
    lab.wait(240)
    assert lab.error is None, lab.error
    assert "killed by SIGKILL" in lab.report_text  # the button's kill, resumed automatically ...
    assert lab.result["identical"]  # ... and still bit-identical


def test_save_interval_explorer_sliders_move_the_answer(monkeypatch):
    from course_lib.beyond.advisor import Costs, advise
    from course_lib.lab.widgets import SaveIntervalExplorer

    costs = Costs(step_seconds=0.03, save_blocking_seconds=0.25, save_write_seconds=0.25, restart_seconds=4.0,
                  finish_seconds=1.0, steps=1500, save_every_steps=128, async_save=False, sources={})
    study = {"mtbf_seconds": 30.0, "advice": advise(costs, 30.0), "steps_per_epoch": 62,
             "points": [{"every_steps": k, "walls": [80.0, 90.0], "median_wall_seconds": 85.0} for k in (8, 128)]}
    ex = SaveIntervalExplorer(study, lang="en")
    first = ex.advice["optimum_steps"]
    assert "every 10 epochs = 620 steps" in ex.answer.value and len(ex.output.outputs) == 1
    ex.mtbf.value = 300.0  # rarer failures: save less often
    assert ex.advice["optimum_steps"] > 2 * first
    ex.covered.value = 0.75  # the survivors' save covers 3 failures in 4: twice the interval
    assert ex.advice["optimum_steps"] == pytest.approx(2 * advise(costs, 300.0)["optimum_steps"], rel=0.05)
    ex.save_cost.value = 0.01
    assert ex.advice["costs"]["save_blocking_seconds"] == 0.01
    zh = SaveIntervalExplorer(study, lang="zh")
    assert "最优间隔" in zh.answer.value and zh.mtbf.description == "平均故障间隔（秒）"
    monkeypatch.setenv("COURSE_LIB_LANG", "zh")
    assert "最优间隔" in SaveIntervalExplorer(study).answer.value
