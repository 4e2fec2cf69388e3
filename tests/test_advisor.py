"""The save-interval advisor: the exact expectation against a simulation, the optimum against
its own closed-form condition, costs read back from a run's records, the CLI and its errors."""
import json
import math

import numpy as np
import pytest

from course_lib.beyond.advisor import (
    Costs,
    advise,
    daly_seconds,
    expected_wall,
    measure_costs,
    parse_duration,
    young_seconds,
)
from course_lib.config import ConfigError


def costs(**kw) -> Costs:
    base = dict(step_seconds=1.0, save_blocking_seconds=2.0, save_write_seconds=2.0, restart_seconds=5.0,
                finish_seconds=0.0, steps=200_000, save_every_steps=100, async_save=False, sources={})
    return Costs(**{**base, **kw})


def test_durations():
    assert parse_duration("6h") == 21600 and parse_duration("30m") == 1800 and parse_duration("90") == 90
    assert parse_duration("1.5d") == 1.5 * 86400 and parse_duration(12) == 12
    for bad in ("6x", "h", "-3s", "0"):
        with pytest.raises(ConfigError, match="duration"):
            parse_duration(bad)


def test_expected_wall_matches_a_simulation_of_random_failures():
    """Segments of k steps + a save must each run through without a failure; a failure costs
    the time spent and a restart (which can fail too). Simulated, not derived."""
    c = costs(steps=60, restart_seconds=3.0)
    k, mtbf, rng = 20, 40.0, np.random.default_rng(0)
    segment = k * c.step_seconds + c.save_blocking_seconds
    totals = []
    for _ in range(20_000):
        t, done, need = 0.0, 0, segment  # the first try of a segment needs no restart
        while done < c.steps // k:
            x = rng.exponential(mtbf)
            if x >= need:
                t, done, need = t + need, done + 1, segment
            else:
                t, need = t + x, c.restart_seconds + segment
        totals.append(t)
    predicted = float(expected_wall(k, c, mtbf)) - c.restart_seconds - c.finish_seconds
    assert abs(np.mean(totals) / predicted - 1) < 0.02


def test_optimum_solves_the_exact_first_order_condition():
    """d/dT of (exp((T+C)/M) - 1)/T = 0  <=>  exp((T+C)/M) (1 - T/M) = 1: solved by bisection."""
    c, mtbf = costs(), 3600.0
    f = lambda t: math.exp((t + c.save_blocking_seconds) / mtbf) * (1 - t / mtbf) - 1  # noqa: E731
    lo, hi = 1.0, mtbf * 0.99
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if f(mid) > 0 else (lo, mid)
    advice = advise(c, mtbf)
    assert abs(advice["optimum_steps"] - lo) <= 1
    assert abs(advice["daly_steps"] - lo) / lo < 0.01  # Daly's series is that close
    assert abs(advice["young_steps"] - math.sqrt(2 * 2.0 * 3600)) < 1e-6 and advice["young_steps"] > lo


def test_covered_failures_lengthen_the_interval_and_async_counts_the_write():
    c, mtbf = costs(), 3600.0
    plain, covered = advise(c, mtbf), advise(c, mtbf, covered=0.75)
    assert covered["optimum_steps"] / plain["optimum_steps"] == pytest.approx(2.0, rel=0.03)  # sqrt(1/(1-q))
    assert covered["expected_lost_share"] < plain["expected_lost_share"]
    slow_write = costs(async_save=True, save_write_seconds=60.0)
    assert float(expected_wall(100, slow_write, mtbf)) > float(expected_wall(100, c, mtbf))
    assert daly_seconds(10.0, 4.0) == 4.0 and young_seconds(2.0, 100.0) == 20.0
    with pytest.raises(ConfigError, match="covered"):
        advise(c, mtbf, covered=1.0)


def _fake_run(run_dir, *, saves=True, restart=True, launched=True):
    """A run directory written the way train.py writes one, with known times."""
    (run_dir / "metrics").mkdir(parents=True)
    (run_dir / "config.json").write_text(json.dumps({"save_every_steps": 10, "async_save": False}))
    rows, t = [], 1000.0
    for step in range(1, 31):
        t += 0.5 + (0.3 if step - 1 in (10, 20) else 0.0)  # a save after steps 10 and 20 blocks 0.3 s
        rows.append({"step": step, "epoch": 0, "attempt": 1, "time": t})
    attempts = [{"started": 999.0, "launched": 998.0 if launched else None}]  # first step 2 s after launch
    if restart:  # killed after step 25, launched again at t + 1, first step 4 s after launch (+ one step)
        attempts.append({"started": t + 3.0, "launched": t + 1.0})
        rows += [{"step": s, "epoch": 0, "attempt": 2, "time": t + 5.5 + 0.5 * (s - 21)} for s in range(21, 31)]
    (run_dir / "metrics" / "rank0.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (run_dir / "attempts.jsonl").write_text("".join(json.dumps(a) + "\n" for a in attempts))
    if saves:
        from torch.utils.tensorboard import SummaryWriter

        with SummaryWriter(str(run_dir / "tb")) as w:
            for step in (10, 20, 30):
                w.add_scalar("checkpoint/blocking_seconds", 0.3, step)
                w.add_scalar("checkpoint/save_seconds", 0.28, step)


def test_costs_read_back_from_a_run(tmp_path):
    _fake_run(tmp_path / "run")
    c = measure_costs(tmp_path / "run")
    assert c.step_seconds == pytest.approx(0.5) and c.save_blocking_seconds == pytest.approx(0.3)
    assert c.restart_seconds == pytest.approx(4.0) and c.steps == 30 and c.save_every_steps == 10
    assert "launch -> first step" in c.sources["restart_seconds"]


def advise_cli(*args, capsys) -> tuple[int, str, str]:
    """``python -m course_lib advise ARGS`` in this process (the one-line errors are main()'s)."""
    from course_lib.cli import main

    code = main(["advise", *map(str, args)])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_advise_cli_and_its_errors(tmp_path, capsys):
    _fake_run(tmp_path / "run")
    code, out, err = advise_cli(tmp_path / "run", "--mtbf", "30m", "--steps", "100000", capsys=capsys)
    assert code == 0 and "Young 1974" in out and "Daly 2006" in out and "never interrupted" not in out, err
    code, out, _ = advise_cli(tmp_path / "run", "--mtbf", "30m", "--json", capsys=capsys)
    as_json = json.loads(out)
    assert as_json["optimum_steps"] >= 1 and as_json["costs"]["restart_seconds"] == pytest.approx(4.0)
    assert as_json["costs"]["restart_from_first_start"] is False

    _fake_run(tmp_path / "torchrun-never-killed", restart=False, launched=False)
    _fake_run(tmp_path / "no-saves", saves=False)
    for args, message in [((tmp_path / "run", "--mtbf", "6 hours"), "not a duration"),
                          ((tmp_path / "missing", "--mtbf", "6h"), "does not exist"),
                          ((tmp_path / "torchrun-never-killed", "--mtbf", "6h"), "pass --restart-seconds"),
                          ((tmp_path / "no-saves", "--mtbf", "6h"), "saved no checkpoint")]:
        code, _, err = advise_cli(*args, capsys=capsys)
        assert code == 2 and message in err and err.count("\n") == 1, err


def test_a_run_never_interrupted_is_advised_from_its_first_start(tmp_path, capsys):
    _fake_run(tmp_path / "never-killed", restart=False)
    code, out, err = advise_cli(tmp_path / "never-killed", "--mtbf", "6h", capsys=capsys)
    assert code == 0, err
    assert "estimated from the first start" in out and "never interrupted" in out
    code, out, _ = advise_cli(tmp_path / "never-killed", "--mtbf", "6h", "--json", capsys=capsys)
    c = json.loads(out)["costs"]
    # launch 998, step 1 at 1000.5
    assert c["restart_from_first_start"] is True and c["restart_seconds"] == pytest.approx(2.0)
    assert "first start" in c["sources"]["restart_seconds"]
    code, out, _ = advise_cli(tmp_path / "never-killed", "--mtbf", "6h", "--restart-seconds", "20s", "--json", capsys=capsys)
    c = json.loads(out)["costs"]
    assert code == 0 and c["restart_seconds"] == 20 and c["sources"]["restart_seconds"] == "given"
    assert c["restart_from_first_start"] is False


@pytest.mark.parametrize("run", ["run", "never-killed"])
def test_a_chinese_notebook_reads_the_whole_report_in_chinese(tmp_path, capsys, run):
    """The lines of ``advise`` and ``verify`` go through the notebook's view: in the Chinese edition
    no English sentence is left (notebook 04, optional deep-dives A and B); on the command line
    they stay English."""
    import re

    from course_lib._runtime.rank_output import set_line_view
    from course_lib.lab.i18n import show_ranks_in

    _fake_run(tmp_path / run, restart=run == "run")
    english = advise_cli(tmp_path / run, "--mtbf", "6h", "--covered", "0.5", capsys=capsys)[1]
    show_ranks_in("zh")
    try:
        code, out, err = advise_cli(tmp_path / run, "--mtbf", "6h", "--covered", "0.5", capsys=capsys)
    finally:
        set_line_view(None)
    assert code == 0 and "Young 1974" in english and "How often" in english, err
    assert len(out.splitlines()) == len(english.splitlines())
    left = [line for line in out.splitlines() if re.search(r"[A-Za-z]{2,} [a-z]{2,} [a-z]{2,}", line)]
    assert not left, left
