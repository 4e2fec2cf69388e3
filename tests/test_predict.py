"""Using a trained run: load_classifier(run).predict and ``python -m course_lib predict``, the review box, the
out-of-domain score, and the errors for runs that cannot be used."""
import json
import shutil

import matplotlib
import pytest
import torch

matplotlib.use("Agg")

from helpers import small_cfg  # noqa: E402

from course_lib.checkpoint.store import CheckpointError  # noqa: E402
from course_lib.config import ConfigError  # noqa: E402
from course_lib.ddp.launch import launch  # noqa: E402
from course_lib.predict import load_classifier, out_of_domain  # noqa: E402

# one worker runs the whole file (its module fixture is trained once): .ci/run uses --dist loadgroup
pytestmark = pytest.mark.xdist_group("test_predict")

REVIEWS = ["An absolute joy from start to finish, wonderful acting.", "Dull, boring and far too long. A waste of time."]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    run = tmp_path_factory.mktemp("predict") / "run"
    launch(small_cfg(run, epochs=3), quiet=True)
    return run


def test_predict_uses_the_runs_final_weights(run):
    clf = load_classifier(run)
    saved = torch.load(run / "final" / "model.pt", weights_only=True)
    assert clf.weights == run / "final" / "model.pt" and not clf.model.training
    assert all(torch.equal(v, saved[k]) for k, v in clf.model.state_dict().items())
    out = clf.predict(REVIEWS)
    assert [p["label"] for p in out] == ["positive", "negative"], out  # 3 epochs of bag learn these words
    assert all(0.5 <= p["probability"] <= 1 and abs(p["positive"] - (p["probability"] if p["label"] == "positive"
               else 1 - p["probability"])) < 1e-3 for p in out)
    assert load_classifier(run).predict(REVIEWS[0]) == out[:1]  # one string is one review, and the answer is deterministic


def test_unfinished_run_uses_its_newest_valid_checkpoint(run, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(run, copy)
    shutil.rmtree(copy / "final")
    assert load_classifier(copy).weights.parent.name.startswith("step-")


def test_runs_that_cannot_be_used(run, tmp_path):
    bare = tmp_path / "bare"
    shutil.copytree(run, bare, ignore=shutil.ignore_patterns("final", "checkpoints"))
    with pytest.raises(ConfigError, match="no trained weights"):
        load_classifier(bare)
    with pytest.raises(ConfigError, match="does not exist"):
        load_classifier(tmp_path / "nothing")
    odd = tmp_path / "odd"
    shutil.copytree(run, odd)
    cfg = json.loads((odd / "config.json").read_text())
    (odd / "config.json").write_text(json.dumps({**cfg, "embed_dim": cfg["embed_dim"] * 2}))
    with pytest.raises(ConfigError, match="do not fit"):
        load_classifier(odd)
    (odd / "config.json").write_text(json.dumps({**cfg, "layers_of_magic": 3}))
    with pytest.raises(ConfigError, match="cannot be rebuilt"):
        load_classifier(odd)
    (odd / "config.json").write_text(json.dumps(cfg))
    torch.save({"model": object()}, odd / "final" / "model.pt")  # code, not data: refused by weights_only
    with pytest.raises(CheckpointError, match="weights_only"):
        load_classifier(odd)
    with pytest.raises(ConfigError, match="empty"):
        load_classifier(run).predict(["fine", "  <br />  "])


def test_predict_command_line(run, tmp_path, capsys, monkeypatch):
    """The command line's own ``main``, in this process (tests/test_bad_input.py runs it in a
    real interpreter)."""
    import io

    from course_lib.cli import main

    def predict_cli(*args):
        code = main(["predict", *map(str, args)])
        out = capsys.readouterr()
        return code, out.out, out.err

    code, out, err = predict_cli(run, REVIEWS[0], "--json")
    assert code == 0 and json.loads(out)["label"] == "positive", err
    (tmp_path / "reviews.txt").write_text("\n".join(REVIEWS) + "\n\n")
    code, out, _ = predict_cli(run, "--file", tmp_path / "reviews.txt")
    assert code == 0 and [line.split()[0] for line in out.splitlines()] == ["positive", "negative"]
    monkeypatch.setattr("sys.stdin", io.StringIO(REVIEWS[1]))
    code, out, _ = predict_cli(run)
    assert code == 0 and out.startswith("negative")
    code, _, err = predict_cli(tmp_path / "none", "good")
    assert code == 2 and err.startswith("error: ") and "does not exist" in err


def test_out_of_domain_and_the_review_box(run):
    from course_lib.lab.widgets import ReviewBox

    ood = out_of_domain(run, limit=300)
    assert ood["count"] == 300 and 0.0 <= ood["accuracy"] <= 1.0
    box = ReviewBox(run, lang="zh")
    box.button.click()
    assert box.result is None and "输入" in box.answer.value
    box.text.value = REVIEWS[1]
    box.button.click()
    assert box.result["label"] == "negative" and "负面" in box.answer.value


def test_predict_table_names_the_wrong_answers(run):
    from course_lib.lab.tables import predict_table

    table = predict_table(run, {REVIEWS[0]: "positive", REVIEWS[1]: "positive"}, lang="en")
    assert list(table["right?"]) == ["yes", "NO"] and list(table["model"]) == ["positive", "negative"]


def test_explain_is_the_models_own_arithmetic(run):
    """The pushes of every token and pair, plus the head's bias, add up to the model's margin
    (logit positive - logit negative): the explanation is the model, not a story about it."""
    from course_lib.lab.tables import explain

    clf = load_classifier(run)
    text = REVIEWS[1]
    every = explain(run, text, top=1000, lang="en")["push towards positive"]
    bias = float((clf.model.head.bias[1] - clf.model.head.bias[0]).detach())
    from course_lib.data.sources import clean_text
    from course_lib.data.tokenization import encode_texts

    ids = torch.tensor([encode_texts(clf.tokenizer, [clean_text(text)], clf.cfg.max_length)["input_ids"][0]])
    with torch.no_grad():
        logits = clf.model(ids, torch.ones_like(ids))[0]
    assert abs(float(every.sum()) + bias - float(logits[1] - logits[0])) < 1e-3 * len(every)



def test_explain_reads_bag_models_only(run, tmp_path):
    from course_lib.lab.tables import explain

    other = tmp_path / "run"
    shutil.copytree(run, other)
    (other / "config.json").write_text(json.dumps({**json.loads((run / "config.json").read_text()), "model": "transformer"}))
    with pytest.raises(ConfigError, match="bag-of-n-grams"):
        explain(other, REVIEWS[0])
