import time

from course_lib.watch.monitor import Ledger, TensorBoardLogger, read_ledger, read_scalars


def test_ledger_last_attempt_wins(tmp_path):
    led = Ledger(tmp_path, 0)
    for step in (1, 2, 3):
        led.write({"step": step, "loss": 1.0, "attempt": 1})
    for step in (3, 4):
        led.write({"step": step, "loss": 2.0, "attempt": 2})
    led.close()
    with open(tmp_path / "metrics" / "rank0.jsonl", "a") as f:
        f.write('{"step": 5, "lo')  # a line cut by a crash
    rows = read_ledger(tmp_path, 0)
    assert [r["step"] for r in rows] == [1, 2, 3, 4] and rows[2]["loss"] == 2.0
    assert len(read_ledger(tmp_path, 0, last_attempt=False)) == 5
    assert read_ledger(tmp_path, 7) == []
    resumed = Ledger(tmp_path, 0)  # the next attempt's first line must not be glued to the cut one
    resumed.write({"step": 5, "loss": 3.0, "attempt": 3})
    resumed.close()
    assert [r["step"] for r in read_ledger(tmp_path, 0)] == [1, 2, 3, 4, 5]


def test_tensorboard_written_and_read_back(tmp_path):
    tb = TensorBoardLogger(tmp_path, enabled=True, hparams={"lr": 0.1})
    for step in range(1, 6):
        tb.scalars(step, **{"train/loss": 1.0 / step, "train/lr": 0.1})
    tb.close()
    # TensorBoard reads a folder's event files in name order: whole seconds, host, pid, then a counter
    # of writers that sorts as text ("10" before "9"); a resumed attempt starts seconds later
    time.sleep(1.02 - time.time() % 1)
    tb2 = TensorBoardLogger(tmp_path, enabled=True)  # a resumed attempt rewrites step 5
    tb2.scalars(5, **{"train/loss": 9.0})
    tb2.close()
    scalars = read_scalars(tmp_path)
    assert [s for s, _ in scalars["train/loss"]] == [1, 2, 3, 4, 5]
    assert scalars["train/loss"][-1][1] == 9.0
    off = TensorBoardLogger(tmp_path / "other", enabled=False)
    off.scalars(1, x=1.0)
    assert not (tmp_path / "other").exists()
