"""Hugging Face Trainer, as its docs teach a resumable run: TrainingArguments(save_steps=...) and
trainer.train(resume_from_checkpoint=get_last_checkpoint(output_dir)), as in the transformers
examples (run_glue.py). A tiny BERT built from a config (no Hub download), 256 random sequences.

    python bench/scorecard/hf_trainer.py --out DIR     # started again in DIR, it resumes
"""
import argparse
import hashlib
import os

import torch
from datasets import Dataset
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments, set_seed
from transformers.trainer_utils import get_last_checkpoint

parser = argparse.ArgumentParser()
parser.add_argument("--out", required=True)
args = parser.parse_args()

training_args = TrainingArguments(
    output_dir=args.out,
    num_train_epochs=3,  # 16 steps an epoch: 48 steps
    per_device_train_batch_size=16,
    learning_rate=1e-3,
    save_strategy="steps",
    save_steps=10,
    logging_steps=10,
    seed=0,
    use_cpu=True,
    report_to="none",
    disable_tqdm=True,
)
# the examples seed before building the model, so that its initialisation is seeded too
set_seed(training_args.seed)

g = torch.Generator().manual_seed(1234)
ids = torch.randint(5, 64, (256, 12), generator=g)
data = Dataset.from_dict({"input_ids": ids.tolist(), "labels": (ids[:, 0] % 2).tolist()})

config = BertConfig(vocab_size=64, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                    intermediate_size=64, max_position_embeddings=16, num_labels=2)
model = BertForSequenceClassification(config)  # dropout 0.1: the run draws from torch's RNG

trainer = Trainer(model=model, args=training_args, train_dataset=data)

# the examples' resume: the newest checkpoint-N folder in output_dir, if there is one
last_checkpoint = get_last_checkpoint(args.out) if os.path.isdir(args.out) else None
if last_checkpoint:
    print("resumed from", os.path.basename(last_checkpoint), flush=True)
trainer.train(resume_from_checkpoint=last_checkpoint)

h = hashlib.sha256()
for name, p in sorted(model.named_parameters()):
    h.update(name.encode() + p.detach().numpy().tobytes())
print("final-params", h.hexdigest()[:16], "steps", trainer.state.global_step)
if os.environ.get("RESULT_FILE"):  # a file whose bytes a crash-consistency tester compares (bench/peer_ckpt_chaos.py)
    open(os.environ["RESULT_FILE"], "w").write(h.hexdigest()[:16])
