"""The chapter's template, reconstructed on the kit's data and run for real (course_lib.textbook): its
lines, its files, its resume, what it loses against the kit's under the same real kills, and the
table of every choice the reconstruction makes."""
import re

import pytest
import torch

from course_lib import textbook
from course_lib.textbook.lessons import STEPS_PER_EPOCH
from course_lib.watch.compare import compare_runs
from course_lib.watch.monitor import read_ledger, read_scalars


def test_the_reconstruction_says_it_is_one_and_lists_every_deviation():
    import inspect

    for module in (textbook, textbook.book):
        doc = inspect.getdoc(module)
        assert "reconstruct" in doc and "as the chapter has it" not in doc
    rows = [row[0][0] for row in textbook.DEVIATIONS]
    assert {"data", "model", "dropout", "batching", "split and score", "printed losses"} <= set(rows)
    for lang in ("en", "zh"):
        table = textbook.deviations(lang)
        assert table.shape == (len(rows), 3) and table.notna().all().all()
    assert "illustrative" in textbook.deviations("en").loc["printed losses"].iloc[0]
    assert "1.2345" in textbook.deviations("zh").loc["打印的损失"].iloc[0]


LINE = re.compile(r"^Rank [01], Epoch \[\d+/\d+\], Step \[\d+/16\], Loss: \d+\.\d{4}$")


def test_book_run_killed_and_resumed_speaks_the_chapters_format(tmp_path):
    """One real SIGKILL in epoch 2, the book's resume from model_epoch_1.pth: the chapter's
    lines, the three-item file, resume_training's line, a SummaryWriter value per epoch."""
    run = textbook.run_book(tmp_path, epochs=2, save_interval=1, kill_at_step=21, show="none")
    assert run.interrupted == "rank 1 killed by SIGKILL after step 20"
    assert list(run.checkpoints) == ["model_epoch_1.pth"]
    ckpt = torch.load(tmp_path / "model_epoch_1.pth", weights_only=True)
    assert sorted(ckpt) == ["epoch", "loss", "model_state_dict", "optimizer_state_dict"] and ckpt["epoch"] == 1
    assert ckpt["model_state_dict"]["embed.weight"].shape[1] == 32  # the kit's default width

    resumed = textbook.run_book(tmp_path, epochs=2, save_interval=1, resume="model_epoch_1.pth", show="none")
    assert resumed.interrupted is None and resumed.attempt == 2 and resumed.steps == 32
    log = (tmp_path / "logs" / "rank0.log").read_text().splitlines()
    steps = [line for line in log if line.startswith("Rank ")]
    assert steps and all(LINE.match(line) for line in steps), steps[:3]
    assert f"starting from epoch 1 with loss {ckpt['loss']:.4f}" in log
    assert steps[0] == steps[0].split(",")[0] + ", Epoch [1/2], Step [1/16]" + steps[0].split("Step [1/16]")[1]
    assert any(line.startswith("Test Accuracy: ") for line in log)
    assert [s for s, _ in read_scalars(tmp_path)["Loss/train"]] == [1, 2]
    rows = read_ledger(tmp_path, 0)
    assert [r["step"] for r in rows] == list(range(1, 33)) and {r["attempt"] for r in rows if r["step"] > 16} == {2}
    assert all(len(r["batch_ids"]) == 64 for r in rows)


@pytest.mark.slow
def test_what_the_book_loses(tmp_path):
    """The expected lesson, measured: the book's resume diverges at the first step after its
    checkpoint and redoes every step since it; the kit's is identical; both pass the chapter's test.
    Three epochs, the chapter's shape shrunk (notebook 05 runs the chapter's 12 epochs, save every 10)."""
    df = textbook.what_the_book_loses(tmp_path, epochs=3, save_interval=2, kill_at_step=40, embed_dim=8, lang="en")
    book, kit = df.attrs["book"], df.attrs["kit"]
    saved = 2 * STEPS_PER_EPOCH  # model_epoch_2.pth: the end of step 32
    assert not book["identical"] and book["first_divergent_step"] == saved + 1
    assert book["skipped_samples"] == book["repeated_samples"] == 0
    assert kit["identical"] and df.attrs["kit_resumed_from"] == saved
    assert df.attrs["book_redone"] == df.attrs["kit_redone"] == 40 - 1 - saved  # steps 33..39 were done, then lost
    after, before = df.attrs["book_acceptance"]
    assert after < before and df.attrs["kit_acceptance"]["passes"]
    assert list(df.index)[1] == "the book, killed at step 40, resume_training('model_epoch_2.pth')"
    again = textbook.what_the_book_loses(tmp_path / "again", epochs=3, save_interval=2, kill_at_step=40, embed_dim=8,
                                         lang="en", book_killed=tmp_path / "book-killed")  # notebook 05: §1's run, judged
    same = ("identical", "first_divergent_step", "skipped_samples", "repeated_samples", "max_loss_diff")
    assert [again.attrs["book"][k] for k in same] == [book[k] for k in same]
    assert again.attrs["book_redone"] == df.attrs["book_redone"]
    assert not (tmp_path / "again" / "book-killed").exists()


def test_what_the_book_loses_refuses_a_run_that_is_not_the_killed_one(tmp_path):
    with pytest.raises(ValueError, match="not a book run killed at step 40"):
        textbook.what_the_book_loses(tmp_path, epochs=3, save_interval=2, kill_at_step=40, embed_dim=8,
                                     book_killed=tmp_path / "nothing")


@pytest.mark.slow
def test_the_book_resume_without_dropout_is_exact(tmp_path):
    """The cause, checked: with no randomness in the loop (dropout 0) the same book resume is
    bit-identical, so the divergence above is the RNG the book does not save."""
    ref, run = tmp_path / "ref", tmp_path / "run"
    textbook.run_book(ref, epochs=3, save_interval=2, dropout=0.0, embed_dim=8, show="none")
    textbook.run_book(run, epochs=3, save_interval=2, dropout=0.0, embed_dim=8, kill_at_step=40, show="none")
    textbook.run_book(run, epochs=3, save_interval=2, dropout=0.0, embed_dim=8, resume="model_epoch_2.pth", show="none")
    assert compare_runs(ref, run)["identical"]
    assert torch.load(run / "model_epoch_2.pth", weights_only=True)["model_state_dict"]["embed.weight"].shape[1] == 8


@pytest.mark.slow  # CI's Run All twice (notebook 04's pair of editions: -m exhaustive)
def test_a_kill_during_the_books_save(tmp_path):
    """Run twice in the same folder, as Restart & Run All does before a class: the second run
    must kill for real again (it once found the first run's kill in faults.jsonl, killed nothing,
    and reported a resume from step 96, the end of the run)."""
    for _ in range(2):
        df = textbook.crash_during_save(tmp_path, embed_dim=8, lang="en")
        files = df.attrs["book_files"]
        assert files["model_epoch_2.pth"] == "loads" and files["model_epoch_4.pth"] != "loads"
        assert "crashed" in df.attrs["book_resume"]
        assert [k["step"] for k in df.attrs["kit_kills"]] == [64], df.attrs["kit_kills"]
        assert df.attrs["kit"]["identical"] and df.attrs["kit_resumed_from"] == 32


def test_checkpoints_sort_by_epoch_not_as_strings(tmp_path):
    for n in (2, 10, 4):
        (tmp_path / f"model_epoch_{n}.pth").write_bytes(b"x")
    assert list(textbook.checkpoints(tmp_path)) == ["model_epoch_2.pth", "model_epoch_4.pth", "model_epoch_10.pth"]


def test_a_rank_that_fails_without_being_killed_raises_with_its_own_last_words(tmp_path, monkeypatch):
    """A killed rank is the lesson and is reported; one that exits non-zero by itself is a
    failure, and its error (the end of its log, where its stderr goes) is in the exception."""
    from course_lib.ddp.launch import RankFailed
    from course_lib.textbook.run import BookSettings, run_ranks

    (tmp_path / "failing_book_worker.py").write_text("import sys\n\ndef train(rank, world_size, settings):\n"
                                                     "    print(f'rank {rank}: the data file is gone')\n    sys.exit(3)\n")
    monkeypatch.syspath_prepend(tmp_path)  # the ranks get this process's sys.path
    settings = BookSettings(run_dir=str(tmp_path / "run"), data_file="unused", epochs=1,
                            worker="failing_book_worker:train")
    with pytest.raises(RankFailed, match=r"exited with code 3 after step 0; it was not killed") as err:
        run_ranks(settings, 2, timeout=60)
    assert "the data file is gone" in str(err.value)
