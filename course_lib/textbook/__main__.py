"""The reconstruction of the chapter's loop as a script, started the chapter's way:
``torch.multiprocessing.spawn`` of :func:`course_lib.textbook.book.train` on two ranks, gloo on
loopback. It is what ``audit`` runs to judge it (notebook 05, §5); ``--resume auto`` is the
chapter's resume from the newest ``model_epoch_N.pth`` (newest by its number: the
reconstruction's choice, where the chapter names the file; :data:`course_lib.textbook.DEVIATIONS`).

    python -m course_lib.textbook --run-dir DIR [--epochs 12] [--save-interval 10] [--resume auto]
"""
from __future__ import annotations

import argparse
import os

import torch.multiprocessing as mp

from course_lib._runtime.portability import free_port
from course_lib.data.prepare import prepare_imdb
from course_lib.textbook.run import DATA_LIMIT, EMBED_DIM, BookSettings, checkpoints, script_rank


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m course_lib.textbook", description=__doc__.split("\n\n")[0])
    ap.add_argument("--run-dir", required=True, help="where the run writes model_epoch_N.pth and its TensorBoard log")
    ap.add_argument("--epochs", type=int, default=12, help="epochs to train (the chapter: 10, then more)")
    ap.add_argument("--save-interval", type=int, default=10, help="save model_epoch_N.pth every N epochs (the chapter: 10)")
    ap.add_argument("--train-reviews", type=int, default=BookSettings.train_reviews, help="IMDB reviews to train on")
    ap.add_argument("--embed-dim", type=int, default=EMBED_DIM, help="the bag model's width")
    ap.add_argument("--resume", choices=("none", "auto"), default="none",
                    help="auto: the chapter's resume_training from the newest model_epoch_N.pth, if there is one")
    a = ap.parse_args(argv)
    os.makedirs(a.run_dir, exist_ok=True)
    data = prepare_imdb(limit=DATA_LIMIT, progress=False)
    newest = list(checkpoints(a.run_dir))[-1:] if a.resume == "auto" else []
    settings = BookSettings(run_dir=a.run_dir, data_file=str(data.path), epochs=a.epochs, save_interval=a.save_interval,
                            train_reviews=a.train_reviews, embed_dim=a.embed_dim,
                            resume=os.path.join(a.run_dir, newest[0]) if newest else None)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))
    mp.spawn(script_rank, args=(2, settings, max(1, (os.cpu_count() or 1) // 2)), nprocs=2)


if __name__ == "__main__":
    main()
