import pytest

from course_lib.data.text_tools import DEMO_RULES, Rule, RuleLabeler, chunk_by_sentence, chunk_fixed, coverage, demo_corpus

TEXT = ("The film opens quietly. Then it explodes! Do we care? The cast does its best, "
        "but the script lets them down. " * 5).strip()


def test_sentence_chunks_cover_and_fit():
    chunks = chunk_by_sentence(TEXT, max_chars=120)
    assert all(len(c.text) <= 120 for c in chunks)
    assert coverage(TEXT, chunks) == 1.0
    long_sentence = "word " * 100
    assert coverage(long_sentence, chunk_by_sentence(long_sentence, 50)) == 1.0


@pytest.mark.parametrize("size,overlap", [(10, 3), (7, 0)])
def test_fixed_chunks_overlap_and_cover(size, overlap):
    chunks = chunk_fixed(TEXT, size, overlap)
    assert coverage(TEXT, chunks) == 1.0
    assert all(len(c.text.split()) <= size for c in chunks)
    assert chunks[1].text.split()[:overlap] == chunks[0].text.split()[size - overlap:]


def test_chunk_errors_and_empty():
    assert chunk_fixed("", 5) == [] and chunk_by_sentence("") == []
    with pytest.raises(ValueError):
        chunk_fixed(TEXT, 5, 5)
    with pytest.raises(TypeError):
        chunk_by_sentence(None)


def test_rule_labels_and_policies():
    lab = RuleLabeler(DEMO_RULES, default="Other")
    assert lab("Machine learning is transforming how we build software.") == "Technology"
    assert lab("Grandma's apple pie") == "Other"
    text = "Investors use machine learning to pick stocks in the stock market."
    assert lab.explain(text)["conflict"] is True
    assert RuleLabeler(DEMO_RULES, policy="first")(text) == "Technology"
    assert RuleLabeler(DEMO_RULES, policy="vote")(text) == "Finance"  # stock, market, stock > ML
    rules = [Rule("A", "x", priority=1), Rule("B", "x", priority=5)]
    assert RuleLabeler(rules, policy="priority")("x") == "B"
    assert len(lab.label_all(demo_corpus())) == len(demo_corpus()) >= 10


def test_rule_errors():
    with pytest.raises(ValueError, match="bad regular expression"):
        Rule("X", "(unclosed")
    with pytest.raises(ValueError, match="policy"):
        RuleLabeler(DEMO_RULES, policy="random")


def test_policy_table_shows_where_rules_conflict():
    from course_lib.data.text_tools import DEMO_RULES
    from course_lib.lab.tables import policy_table

    t = policy_table(DEMO_RULES, ["Our team wrote an algorithm to schedule hospital doctors and patients."], lang="en")
    row = t.iloc[0]
    assert row["first"] == "Technology" and row["vote"] == "Health"
