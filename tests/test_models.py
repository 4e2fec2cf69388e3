import pytest
import torch

from course_lib.ddp.models import build_model, parameter_count


@pytest.mark.parametrize("name", ["bag", "transformer", "minilm"])
def test_models_take_ids_and_mask_and_ignore_padding(name):
    torch.manual_seed(0)
    model = build_model(name, 30522, max_length=64).eval()
    ids = torch.randint(1000, 2000, (2, 10))
    mask = torch.ones_like(ids)
    padded_ids = torch.cat([ids, torch.zeros(2, 6, dtype=torch.long)], dim=1)
    padded_mask = torch.cat([mask, torch.zeros(2, 6, dtype=torch.long)], dim=1)
    with torch.no_grad():
        out = model(ids, mask)
        out_padded = model(padded_ids, padded_mask)
    assert out.shape == (2, 2)
    assert torch.allclose(out, out_padded, atol=1e-5)  # padding is masked, not read
    assert parameter_count(model) > 0


def test_model_errors():
    with pytest.raises(ValueError, match="wordpiece"):
        build_model("minilm", 50257)
    with pytest.raises(ValueError, match="unknown model"):
        build_model("gpt5", 100)
