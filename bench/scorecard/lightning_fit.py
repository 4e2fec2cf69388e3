"""PyTorch Lightning, as its checkpointing docs teach a resumable run:
ModelCheckpoint(every_n_train_steps=..., save_last=True) and trainer.fit(model, ckpt_path="last");
seed_everything(..., workers=True) and Trainer(deterministic=True) as its reproducibility notes say.

    python bench/scorecard/lightning_fit.py --out DIR     # started again in DIR, it resumes
"""
import argparse
import hashlib
import os

import lightning as L
import torch
import torch.nn.functional as F
from lightning.pytorch.callbacks import ModelCheckpoint
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--out", required=True)
args = parser.parse_args()
EPOCHS = 3


class Classifier(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Dropout(0.1),
                                       torch.nn.Linear(32, 2))

    def training_step(self, batch, batch_idx):
        x, y = batch
        return F.cross_entropy(self.net(x), y)

    def configure_optimizers(self):
        optimizer = torch.optim.AdamW(self.parameters(), lr=1e-2)
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1 - s / (EPOCHS * 16))
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}


L.seed_everything(0, workers=True)
g = torch.Generator().manual_seed(1234)
x = torch.randn(256, 16, generator=g)
y = (x[:, 0] > 0).long()
train_loader = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True)
model = Classifier()

checkpoint = ModelCheckpoint(dirpath=os.path.join(args.out, "checkpoints"), every_n_train_steps=10, save_last=True)
trainer = L.Trainer(max_epochs=EPOCHS, accelerator="cpu", devices=1, deterministic=True, callbacks=[checkpoint],
                    default_root_dir=args.out, logger=False, enable_progress_bar=False, enable_model_summary=False)
trainer.fit(model, train_dataloaders=train_loader, ckpt_path="last")  # "last": none yet -> a fresh start

h = hashlib.sha256()
for name, p in sorted(model.named_parameters()):
    h.update(name.encode() + p.detach().numpy().tobytes())
print("final-params", h.hexdigest()[:16], "steps", trainer.global_step)
if os.environ.get("RESULT_FILE"):  # a file whose bytes a crash-consistency tester compares (bench/peer_ckpt_chaos.py)
    open(os.environ["RESULT_FILE"], "w").write(h.hexdigest()[:16])
