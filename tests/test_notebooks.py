"""Every notebook, executed top to bottom with small parameters (papermill injects them
after the cell tagged ``parameters``)."""
import json
from pathlib import Path

import papermill as pm
import pytest

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
SMALL = {
    "01_data_cleaning_dedup.ipynb": {"LIMIT": 2000, "PLANTED": 50},
    "02_tokenization.ipynb": {"N_REVIEWS": 600, "OWN_VOCAB": 1000},
    "03_ddp_launch.ipynb": {"TRAIN_LIMIT": 1200, "EPOCHS": 1, "SCALING_STEPS": 6},
    "04_monitoring_checkpoints.ipynb": {"TRAIN_LIMIT": 1200, "SAVE_EVERY": 5, "START_TENSORBOARD": False},
    "05_interruption_resume.ipynb": {"TRAIN_LIMIT": 1200, "KILL_AT": 12, "SAVE_EVERY": 5, "CAPSTONE_QUICK": True,
                                     "MODES": ["full", "no-rng"]},
}


def test_every_notebook_is_covered_and_stripped():
    found = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))
    assert found == sorted(SMALL)
    for name in found:
        nb = json.loads((NOTEBOOKS / name).read_text())
        code = [c for c in nb["cells"] if c["cell_type"] == "code"]
        assert sum("parameters" in c["metadata"].get("tags", []) for c in code) == 1, name
        assert all(not c["outputs"] and c["execution_count"] is None for c in code), f"{name} has outputs"


@pytest.mark.parametrize("name", sorted(SMALL))
def test_notebook_runs(name, tmp_path, monkeypatch):
    monkeypatch.delenv("MPLBACKEND", raising=False)  # an Agg backend would hide the notebooks' figures
    params = {**SMALL[name]}
    if "RUN_DIR" in (NOTEBOOKS / name).read_text():
        params["RUN_DIR"] = str(tmp_path / "runs")
    out = tmp_path / name
    pm.execute_notebook(str(NOTEBOOKS / name), str(out), parameters=params, cwd=str(tmp_path), progress_bar=False)
    nb = json.loads(out.read_text())
    errors = [o for c in nb["cells"] for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
    images = [o for c in nb["cells"] for o in c.get("outputs", []) if "image/png" in o.get("data", {})]
    assert images, f"{name} drew no figure"
