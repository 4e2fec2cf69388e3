"""Every choice the reconstruction of the chapter's template (:mod:`course_lib.textbook.book`) makes
where the chapter's template is not this, and why: :data:`DEVIATIONS`, and :func:`deviations` as a table."""
import pandas as pd

from course_lib.lab.i18n import both, resolve, tr

# (what, the chapter, this reconstruction, why), in English (their Chinese: lab/zh/textbook.py; the row
# names under the context "deviation"). "The chapter" is what the chapter's summary says; where it says
# nothing, so does this column.
ROWS = (
    ("data",
     "an example model on toy data (11.2-11.4); IMDB through datasets and a tokenizer (11.5)",
     "1,024 real IMDB reviews, cleaned, deduplicated and tokenized by station 2's prepare_imdb",
     "real text, offline; 16 steps an epoch on 2 ranks, as the chapter's output shows"),
    ("model",
     "an example model; part of 11.5's code is printed as images",
     "the kit's bag of word n-grams (build_model('bag'))",
     "trains in seconds on a CPU; the kit's trainer uses it too, so runs compare"),
    ("dropout",
     "not stated",
     "0.1",
     "randomness in every step, so a resume has an RNG state to lose (station 5)"),
    ("batching",
     "a DataLoader over a DistributedSampler",
     "the same, 32 reviews per rank and step, each batch padded by the kit's pad_batch",
     "station 2's dynamic padding and attention_mask"),
    ("optimizer",
     "an optimizer whose state the checkpoint saves",
     "AdamW at a fixed 5e-3, no schedule",
     "the simplest choice that trains this model"),
    ("split and score",
     "Test Accuracy on IMDB's test set (89.15% in 11.5)",
     "the chapter's line, on the kit's held-out 20% of IMDB's training split",
     "the offline copy of IMDB has no test split (station 1)"),
    ("printed losses",
     "1.2345 and 1.3456 in epoch 1, 0.2345 and 0.3456 in epoch 10: digits that read as illustrative, not measured",
     "measured, about 0.69 = ln 2 at first (two labels, a model that starts by guessing)",
     "the chapter's numbers are not a run to compare with"),
    ("seed",
     "not stated",
     "torch.manual_seed(settings.seed) at the start of train, in every attempt and on every rank, a resumed one too",
     "without it two runs never interrupted differ, and station 5's audit stops at its first test; with it a resumed "
     "attempt draws its dropout masks from the seed again, not from where the run stopped: the loss the audit names (rng)"),
    ("the file resumed from",
     "a file the chapter names: model_epoch_10.pth (11.4)",
     "the newest model_epoch_N.pth by its number N: station 5 passes it by name; python -m course_lib.textbook --resume "
     "auto, the script the audit runs, finds it itself",
     "the audit restarts the same command unattended, so the script must find its own file; by number, since as strings "
     "model_epoch_10.pth sorts before model_epoch_8.pth; whether the file loads is not checked, so a half-written newest "
     "file stops the resume (the audit's not-atomic)"),
    ("the kit's lines",
     "none",
     "four lines marked # kit: the ledger, the planned kills, the summary",
     "so compare can judge a book run; they change nothing it computes"),
)
DEVIATIONS = tuple((both(what, context="deviation"), *map(both, rest)) for what, *rest in ROWS)  # each (English, Chinese)


def deviations(lang: str | None = None) -> pd.DataFrame:
    """Every choice the reconstruction makes where the chapter's template is not this: what the
    chapter has, what :mod:`.book` does, and why. Used in notebook 03 (§2)."""
    pick = 1 if resolve(lang) == "zh" else 0
    columns = [tr(name, lang) for name in ("the chapter", "this reconstruction", "why")]
    return pd.DataFrame([[cell[pick] for cell in row[1:]] for row in DEVIATIONS],
                        index=pd.Index([row[0][pick] for row in DEVIATIONS]), columns=columns)


def source(obj, lang: str | None = None) -> str:
    """The source of ``obj`` (the reconstruction's ``train``) as a notebook prints it: the chapter's
    code as the chapter prints it, with the lines the kit adds marked ``# kit: ...``; in the Chinese
    edition the comments are Chinese (their entries in the one store), so a reader of that edition
    reads what each marked line does. Used in notebook 03 (§2)."""
    import inspect
    import re

    text = inspect.getsource(obj)
    if resolve(lang) != "zh":
        return text
    return re.sub(r"# (.+)$", lambda m: "# " + tr(m.group(1).strip(), "zh"), text, flags=re.M)
