"""A limited evaluation scores both classes: the held-out split keeps the source's order
(every negative review first), so "the first N" scored one class only."""
import torch

from course_lib.data.prepare import TokenSplit
from course_lib.ddp.evaluation import held_out_metrics, stratified_subset


class AlwaysNegative(torch.nn.Module):
    def forward(self, input_ids, attention_mask):
        return torch.tensor([[1.0, 0.0]]).expand(len(input_ids), 2)


def source_ordered_split(n_neg=600, n_pos=400) -> TokenSplit:
    labels = [0] * n_neg + [1] * n_pos  # as the offline source and our split keep them
    return TokenSplit.from_lists([[5, 6, 7]] * len(labels), labels, list(range(len(labels))))


def test_subset_keeps_each_class_share_and_is_fixed():
    labels = torch.tensor([0] * 600 + [1] * 400)
    chosen = stratified_subset(labels, 201)
    assert len(chosen) == 201 and chosen == sorted(set(chosen))
    assert abs(int(labels[chosen].sum()) - 80) <= 1  # 40% positive, like the whole
    assert chosen == stratified_subset(labels, 201)
    assert stratified_subset(labels, 5000) == list(range(1000))


def test_limited_evaluation_of_a_one_class_model_is_not_perfect():
    data = source_ordered_split()
    limited = held_out_metrics(AlwaysNegative(), data, 0, rank=0, world_size=1, device=torch.device("cpu"), limit=200)
    whole = held_out_metrics(AlwaysNegative(), data, 0, rank=0, world_size=1, device=torch.device("cpu"))
    assert limited["val_count"] == 200
    assert abs(limited["val_accuracy"] - 0.6) < 0.01, limited  # "the first 200" said 100%
    assert whole["val_accuracy"] == 0.6
