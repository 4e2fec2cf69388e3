"""The scaling lab's arithmetic and its one-step anatomy (the launched runs are covered by
notebook 03 and the benchmark)."""
import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

from course_lib.lab import plots, scaling  # noqa: E402


def test_ring_allreduce_moves_twice_the_gradient_minus_one_share():
    one_gb = scaling.allreduce_seconds(250_000_000, world_size=2, gbit_per_s=8)  # 1 GB of fp32 over 1 GB/s
    assert one_gb == pytest.approx(1.0)
    assert scaling.allreduce_seconds(250_000_000, world_size=4, gbit_per_s=8) == pytest.approx(1.5)
    assert scaling.allreduce_seconds(10**9, world_size=1, gbit_per_s=1) == 0.0
    table = scaling.allreduce_table("bag")
    assert table["gradient_mb"] == pytest.approx(table["parameters"] * 4 / 2**20)
    assert list(table["seconds"].values()) == sorted(table["seconds"].values(), reverse=True)



def test_the_links_table_writes_each_time_out_in_two_digits():
    """03 §6's table: a row a link, a column a model, seconds written out (never 2.3e-05, never 17.)."""
    frame = scaling.allreduce_frame(lang="en")
    assert list(frame.index) == list(scaling.LINKS_GBIT) and frame.index.name == "link"
    bag = scaling.allreduce_table("bag")
    column = next(c for c in frame.columns if c.startswith("bag ("))
    for link, shown in frame[column].items():
        assert shown.endswith(" s") and "e" not in shown and not shown[:-2].endswith(".")
        assert float(shown[:-2]) == pytest.approx(bag["seconds"][link], rel=0.05)
    assert [scaling._seconds(v) for v in (17.0, 2.3e-05, 0.172)] == ["17 s", "0.000023 s", "0.17 s"]
    assert set(scaling.allreduce_frame(lang="zh").iloc[:, 0]) == {"同一节点内", "节点之间"}


def test_step_anatomy_times_every_phase_and_the_fused_update_is_cheaper():
    anatomy = scaling.step_anatomy("bag", batch_size=16, train_limit=600, repeats=3)
    assert set(anatomy) == {"fused AdamW", "foreach AdamW"}
    for phases in anatomy.values():
        assert list(phases) == list(scaling.PHASES) and all(s > 0 for s in phases.values())
    # one pass over memory per tensor instead of one per operation: ~6x on this model
    assert anatomy["fused AdamW"]["AdamW step"] < anatomy["foreach AdamW"]["AdamW step"]
    fig = plots.stacked_bars(anatomy, "one step")
    assert len(fig.axes[0].patches) == 2 * len(scaling.PHASES)
