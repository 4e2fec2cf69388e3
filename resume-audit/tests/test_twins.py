"""The zoo's fixed twins (tests/twins.py), fast: every broken script carries its fix as markers,
and its twin is that script with exactly the marked lines replaced. Whether a twin resumes
exactly is settled by hand (tests/zoo/hand_truth.py, tests/zoo/README.md) and by the audit."""
import pytest
from twins import FIX, ZOO, broken_scripts, fixed_twin

BROKEN = broken_scripts()


def test_the_zoo_has_its_broken_scripts_and_its_new_families():
    names = {p.stem for p in BROKEN}
    assert len(names) == 29 and not {p.stem for p in ZOO.glob("correct_*.py")} & names
    assert {"buffers_not_saved", "pickle_in_place", "numpy_in_place", "python_numpy_rng_not_saved",
            "shuffle_from_global_rng", "background_save_live", "newest_by_string_sort", "sigterm_save_ignored",
            "no_fsync", "no_dir_fsync"} <= names


@pytest.mark.parametrize("script", BROKEN, ids=[p.stem for p in BROKEN])
def test_a_twin_differs_from_its_broken_script_exactly_on_the_marked_lines(tmp_path, script):
    broken = script.read_text().splitlines()
    marked = {i for i, line in enumerate(broken) if FIX.fullmatch(line)}
    assert marked, f"{script.name}: no '# fix:' marker"
    twin = fixed_twin(script, tmp_path)
    assert twin == tmp_path / script.name and (tmp_path / "zoo_common.py").read_text() == (
        ZOO / "zoo_common.py").read_text()
    text = twin.read_text()
    compile(text, str(twin), "exec")
    fixed = text.splitlines()
    assert len(fixed) == len(broken)
    assert {i for i, (a, b) in enumerate(zip(broken, fixed)) if a != b} == marked
    for i in marked:
        indent = broken[i][: len(broken[i]) - len(broken[i].lstrip())]
        assert fixed[i] == indent + FIX.fullmatch(broken[i])["fix"]
    assert "# fix:" not in text


def test_a_script_without_a_marker_has_no_twin(tmp_path):
    with pytest.raises(ValueError, match="no '# fix:' marker"):
        fixed_twin(ZOO / "correct_one_process.py", tmp_path)
    assert not any(FIX.search(line) for line in (ZOO / "zoo_common.py").read_text().splitlines())
