"""Results as tables a learner reads, in the notebook's language."""
from course_lib.lab import tables

RESULT = {"identical": False, "first_divergent_step": 22, "max_loss_diff": 0.0012, "skipped_samples": 0,
          "repeated_samples": 263, "final_params_identical": False}


def test_facts_keep_integers_and_leave_out_nested_values():
    t = tables.facts({"raw_reviews": 25000, "ratio": 0.123456, "nested": {"a": 1}, "done": True}, lang="en")
    assert list(t.index) == ["raw reviews", "ratio", "done"]
    assert t.loc["raw reviews", "value"] == 25000 and t.loc["ratio", "value"] == 0.1235 and t.loc["done", "value"] == "yes"


def test_comparisons_and_reading_in_both_languages():
    en = tables.comparisons({"weights-only": RESULT, "full": {**RESULT, "identical": True, "first_divergent_step": None}},
                            lang="en")
    assert en.loc["weights-only", "first divergent step"] == 22 and en.loc["full", "identical?"] == "yes"
    assert tables.reading(RESULT, lang="en") == "identical? no; first divergent step: 22"
    zh = tables.comparisons({"full": RESULT}, lang="zh")
    assert all(any("\u4e00" <= ch <= "\u9fff" for ch in col) for col in zh.columns), list(zh.columns)
    assert "否" in tables.reading(RESULT, lang="zh")
