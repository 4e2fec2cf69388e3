"""The chapter's template, reconstructed on the kit's data: read it top to bottom.

A reconstruction, not the chapter's listing: the chapter prints its DDP template in parts
(11.2-11.4) and part of its case's code (11.5) as images, with an example model on toy data.
The steps are the chapter's, in its order: one process per rank, ``init_process_group("gloo")``,
a ``DistributedSampler`` feeding a ``DataLoader``, ``DDP``, ``sampler.set_epoch(epoch)``, one line
per rank and step in the chapter's format, a ``SummaryWriter`` written once per epoch, every
``save_interval`` epochs the three-item checkpoint ``model_epoch_{N}.pth``, and
``resume_training`` (11.5 prints it as text) to load it back. The choices the chapter leaves open
(data, model, batching, optimizer, the split "Test Accuracy" scores) are the kit's: every one, and
why, in :data:`course_lib.textbook.DEVIATIONS`.

Four lines belong to the kit, each marked ``# kit``: the observer that writes the kit's ledger
(so ``compare`` can judge a book run), starts the planned faults, and writes
``final/summary.json``. They read the run; they change nothing it computes. One rule is the
kit's too: ``torch.load(..., weights_only=True)`` (since PyTorch 2.6 the default; said here for
older versions, and because a checkpoint is data, never code).

:func:`course_lib.textbook.run_book` starts this code with ``torch.multiprocessing.spawn``.
"""
from __future__ import annotations

import functools
import os

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler
from torch.utils.tensorboard import SummaryWriter

from course_lib.data.batching import pad_batch
from course_lib.data.prepare import PreparedData
from course_lib.ddp.models import build_model
from course_lib.textbook.observer import Observer


class IMDBReviews(Dataset):
    """The first ``n`` reviews of one split of the prepared (cleaned, deduplicated,
    tokenized) IMDB data: ``input_ids``, ``label`` and the review's ``id``. An index past ``n`` raises
    ``IndexError``, so that iterating over it ends at ``n``. Used in notebook 03 (exercises)."""

    def __init__(self, data_file: str, split: str = "train", n: int | None = None):
        data = PreparedData.load(data_file)
        self.reviews = data.train if split == "train" else data.test
        self.n = len(self.reviews) if n is None else min(n, len(self.reviews))
        self.vocab_size = data.info["tokenizer"]["vocab_size"]
        self.pad_id = data.info["tokenizer"]["pad_id"]

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> dict:
        i = int(i) + self.n if i < 0 else int(i)
        if not 0 <= i < self.n:
            raise IndexError(f"review {i} of {self.n}")
        return {"input_ids": self.reviews.sequence(i).tolist(), "label": int(self.reviews.labels[i]),
                "id": int(self.reviews.ids[i])}


def resume_training(model, optimizer, checkpoint_path):
    checkpoint = torch.load(checkpoint_path, weights_only=True)
    model.load_state_dict(checkpoint["model_state_dict"])
    optimizer.load_state_dict(checkpoint["optimizer_state_dict"])
    epoch = checkpoint["epoch"]
    loss = checkpoint["loss"]
    print(f"starting from epoch {epoch} with loss {loss:.4f}")
    return epoch


def evaluate(model, dataloader):
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for batch in dataloader:
            predictions = model(batch["input_ids"], batch["attention_mask"]).argmax(dim=1)
            correct += (predictions == batch["label"]).sum().item()
            total += len(predictions)
    return correct / total


def train(rank, world_size, settings):
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    torch.manual_seed(settings.seed)

    dataset = IMDBReviews(settings.data_file, "train", settings.train_reviews)
    collate = functools.partial(pad_batch, pad_id=dataset.pad_id)
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank)
    dataloader = DataLoader(dataset, batch_size=settings.batch_size, sampler=sampler, collate_fn=collate)

    model = build_model("bag", dataset.vocab_size, dim=settings.embed_dim, dropout=settings.dropout)
    ddp_model = DDP(model)
    optimizer = torch.optim.AdamW(ddp_model.parameters(), lr=settings.lr)
    criterion = nn.CrossEntropyLoss()
    writer = SummaryWriter(os.path.join(settings.run_dir, "tb")) if rank == 0 else None
    kit = Observer(settings, rank, world_size, len(dataloader))  # kit: the ledger and the planned faults

    start_epoch = 0
    if settings.resume:
        start_epoch = resume_training(model, optimizer, settings.resume)

    for epoch in range(start_epoch, settings.epochs):
        sampler.set_epoch(epoch)
        ddp_model.train()
        running_loss = 0.0
        for step, batch in enumerate(dataloader):
            optimizer.zero_grad()
            outputs = ddp_model(batch["input_ids"], batch["attention_mask"])
            loss = criterion(outputs, batch["label"])
            loss.backward()
            optimizer.step()
            running_loss += loss.item()
            print(f"Rank {rank}, Epoch [{epoch + 1}/{settings.epochs}], Step [{step + 1}/{len(dataloader)}], "
                  f"Loss: {loss.item():.4f}")
            kit.record(epoch, step, loss.item(), batch)  # kit: one ledger row; a planned SIGKILL fires here

        avg_loss = running_loss / len(dataloader)
        if rank == 0:
            writer.add_scalar("Loss/train", avg_loss, epoch + 1)
        if rank == 0 and (epoch + 1) % settings.save_interval == 0:
            path = os.path.join(settings.run_dir, f"model_epoch_{epoch + 1}.pth")
            checkpoint = {"epoch": epoch + 1, "model_state_dict": model.state_dict(),
                          "optimizer_state_dict": optimizer.state_dict(), "loss": avg_loss}
            kit.before_save(checkpoint, path)  # kit: a planned kill dies half-way through this file
            torch.save(checkpoint, path)

    accuracy = None
    if rank == 0:
        writer.close()
        test_set = IMDBReviews(settings.data_file, "test")
        accuracy = evaluate(model, DataLoader(test_set, batch_size=256, collate_fn=collate))
        print(f"Test Accuracy: {accuracy:.2%}")  # the chapter's line, here on the kit's held-out split
    kit.finish(model, accuracy)  # kit: final/summary.json with the parameters' sha256
    dist.destroy_process_group()
