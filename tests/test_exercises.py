"""Exercises a learner can check: every check passes its reference solution and fails the typical
wrong answers with the right diagnosis; the 04/05 checks kill the learner's training for real. An
answer is shown only when asked for, no hint gives the code away, and the quizzes' numbers are
those of their sources."""
import importlib
import inspect
import json
import os
import re
import statistics
import subprocess
import sys

import pytest

from course_lib._runtime.rank_start import load_module
from course_lib.exercises import EXERCISES, check, hint, quiz, solution, solution_of
from course_lib.exercises.carry import CannotCarry, write_module
from course_lib.exercises.grading import find_submissions, grade_one
from course_lib.exercises.quiz import QUESTIONS, options
from tests.conftest import REPO

SPAWNING = {ex for ex, e in EXERCISES.items() if e.spawns}
FAST = sorted(set(EXERCISES) - SPAWNING)


def _wrong(exercise):
    module = importlib.import_module(f"tests.exercise_answers.wrong{exercise[:2]}")
    return [pytest.param(exercise, funcs, expected, id=f"{exercise}-{label}")
            for label, funcs, expected in module.WRONG[exercise]]


def _also_right():
    from tests.exercise_answers.other_right import RIGHT

    return [pytest.param(exercise, funcs, id=f"{exercise}-{label}") for exercise, answers in RIGHT.items()
            for label, funcs in answers]


def test_every_notebook_has_two_code_exercises_with_hints_and_a_solution():
    for nb in ("01", "02", "03", "04", "05"):
        mine = [e for e in EXERCISES.values() if e.id.startswith(nb)]
        assert len(mine) >= 2 and nb in QUESTIONS and 3 <= len(QUESTIONS[nb]) <= 5
        for e in mine:
            assert len(e.hints) >= 2 and solution_of(e.id)


@pytest.mark.parametrize("exercise", FAST)
def test_the_reference_solution_passes(exercise):
    result = check(exercise, *solution_of(exercise), seed=11, lang="en")
    assert result.passed, result.diagnosis


@pytest.mark.parametrize("exercise,funcs,expected", [p for ex in FAST for p in _wrong(ex)])
def test_a_wrong_answer_fails_with_its_diagnosis(exercise, funcs, expected):
    result = check(exercise, *funcs, seed=11, lang="en")
    assert not result.passed and expected in result.diagnosis, result.diagnosis


@pytest.mark.slow
@pytest.mark.parametrize("exercise", sorted(SPAWNING))
def test_the_reference_solution_passes_in_real_processes(exercise):
    result = check(exercise, *solution_of(exercise), seed=11, lang="en")
    assert result.passed, result.diagnosis


@pytest.mark.slow
@pytest.mark.parametrize("exercise,funcs,expected", [p for ex in sorted(SPAWNING) for p in _wrong(ex)])
def test_a_wrong_answer_fails_in_real_processes(exercise, funcs, expected):
    result = check(exercise, *funcs, seed=11, lang="en")
    assert not result.passed and expected in result.diagnosis, result.diagnosis


@pytest.mark.slow
@pytest.mark.parametrize("exercise,funcs", _also_right())
def test_another_right_answer_passes_in_real_processes(exercise, funcs):
    """04.save: a temporary file renamed with os.rename is as atomic as os.replace."""
    result = check(exercise, *funcs, seed=11, lang="en")
    assert result.passed, result.diagnosis


def test_a_learners_exception_is_their_traceback_with_the_exercise_named():
    def chunk_words(text, size, overlap):
        return text.split()[10 ** 6]

    result = check("01.chunk", chunk_words, seed=1, lang="en")
    assert not result.passed and result.diagnosis.startswith("01.chunk: your chunk_words() raised")
    assert "IndexError" in result.diagnosis and "course_lib" not in result.diagnosis


def test_a_diagnosis_speaks_the_notebooks_language():
    from tests.exercise_answers.wrong01 import no_overlap

    assert "相邻两个片段" in check("01.chunk", no_overlap, seed=1, lang="zh").diagnosis


def test_the_seed_is_printed_and_repeats_the_attempt():
    a, b = (check("02.group", *solution_of("02.group"), seed=5, lang="en") for _ in range(2))
    assert a.seed == 5 and a.diagnosis == b.diagnosis
    assert check("02.group", *solution_of("02.group"), lang="en").seed >= 0


def test_hints_come_one_at_a_time():
    first, second = hint("01.dedup", lang="en"), hint("01.dedup", lang="en")
    assert first.startswith("Hint 1 of 3") and second.startswith("Hint 2 of 3")


def test_the_solution_is_shown_only_when_asked():
    notice = solution("05.newest", lang="en")
    assert notice.startswith('The reference solution of 05.newest is one call away: solution("05.newest", '
                             'reveal=True). Stuck? hint("05.newest") gives the next hint (3 of 3 left).')
    hint("05.newest", lang="en")
    assert "(2 of 3 left)" in solution("05.newest", lang="en")
    assert "（共 3 条，还剩 2 条）" in solution("05.newest", lang="zh")
    for _ in range(3):
        hint("05.newest", lang="en")
    assert "You have seen all 3 hints of 05.newest" in solution("05.newest", lang="en")
    answer = inspect.getsource(solution_of("05.newest")[0])
    assert not any(line.strip() in notice for line in answer.splitlines() if len(line.strip()) > 8)
    text = solution("04.save", reveal=True, lang="zh")
    assert "course_lib/exercises/solutions/ex04.py" in text and "def save_checkpoint" in text and "原子" in text
    assert "os.fsync(f.fileno())" in text and "断电" in text  # fsync, and what it protects against


@pytest.mark.parametrize("exercise", sorted(EXERCISES))
def test_no_hint_gives_the_code_away(exercise):
    """A hint moves one step (the idea, the API, the shape of the code): none before the last holds a
    line of the reference solution, the last at most a short fragment (two lines)."""
    lines = {line.strip() for fn in solution_of(exercise) for line in inspect.getsource(fn).splitlines()[1:]
             if len(line.strip()) >= 16 and not line.strip().startswith("#")}
    hints = EXERCISES[exercise].hints
    assert len(hints) >= 3
    for k, (en, zh) in enumerate(hints):
        given = [line for line in lines if line in en or line in zh]
        assert len(given) <= (2 if k == len(hints) - 1 else 0), (k + 1, given)


def test_wrong_arguments_are_said_plainly():
    result = check("04.save", print, lang="en")
    assert not result.passed and "save_checkpoint, load_checkpoint" in result.diagnosis


# ------------------------------------------------------------ carrying notebook code to spawned ranks
def test_carry_takes_the_helpers_a_function_uses(tmp_path):
    from tests.exercise_answers import wrong04

    path = write_module({"save_checkpoint": wrong04.no_rng_save}, tmp_path / "m.py")
    module = load_module(path)
    assert module.save_checkpoint.__name__ == "no_rng_save" and hasattr(module, "_save")


def test_carry_says_what_it_cannot_carry(tmp_path):
    with pytest.raises(CannotCarry, match="lambda"):
        write_module({"f": lambda x: x}, tmp_path / "a.py")

    def outer():
        k = 1

        def inner(x):
            return x + k
        return inner
    with pytest.raises(CannotCarry, match="inside another function"):
        write_module({"f": outer()}, tmp_path / "b.py")
    namespace = {}
    exec("def f(x):\n    return x\n", namespace)
    with pytest.raises(CannotCarry, match="source of f cannot be found"):
        write_module({"f": namespace["f"]}, tmp_path / "c.py")


# ------------------------------------------------------------ quizzes, driven like ipywidgets' own tests
@pytest.mark.parametrize("notebook", sorted(QUESTIONS))
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_quiz_explains_every_wrong_answer(notebook, lang):
    q = quiz(notebook, lang=lang)
    for number, item in enumerate(q.items, 1):
        item.button.click()
        assert item.feedback.value in ("Choose an answer first.", "先选一个答案。")
        for option, (_, why) in zip(item.choice.options, options(notebook, number), strict=True):
            item.choice.value = option
            item.button.click()
            if why is None:
                assert item.correct and ("Right." in item.feedback.value or "正确" in item.feedback.value)
            else:
                assert not item.correct and why[1 if lang == "zh" else 0] in item.feedback.value


def test_quiz_options_are_shuffled_the_same_way_in_every_run_and_both_editions():
    firsts = []
    for notebook, questions in QUESTIONS.items():
        en, again, zh = quiz(notebook, lang="en"), quiz(notebook, lang="en"), quiz(notebook, lang="zh")
        for number, (a, b, c) in enumerate(zip(en.items, again.items, zh.items, strict=True), 1):
            assert a.choice.options == b.choice.options
            assert list(c.choice.options) == [answer[1] for answer, _ in a.answers]  # the same order in Chinese
            assert sorted(map(repr, a.answers)) == sorted(map(repr, questions[number - 1][1]))  # each keeps its why
            firsts.append(a.answers[0][1] is None)
    assert 0 < sum(firsts) < len(firsts) / 2  # the right answer is not always the first option
    script = "from course_lib.exercises.quiz import QUESTIONS, options\nprint([[a[0][0] for a in options(nb, i + 1)] " \
             "for nb in sorted(QUESTIONS) for i in range(len(QUESTIONS[nb]))])"
    here = [[a[0][0] for a in options(nb, i + 1)] for nb in sorted(QUESTIONS) for i in range(len(QUESTIONS[nb]))]
    other = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True,
                           env={**os.environ, "PYTHONHASHSEED": "12345"})
    assert other.stdout.strip() == repr(here)  # another interpreter, another hash seed: the same order


def _quiz_text(notebook: str, lang: str) -> str:
    pick = 1 if lang == "zh" else 0
    return "\n".join([q[pick] for q, _ in QUESTIONS[notebook]] + [t[pick] for _, answers in QUESTIONS[notebook]
                                                                   for answer, why in answers for t in (answer, why) if t])


def _bench(name: str) -> dict:
    return json.loads((REPO / "bench" / "results" / f"{name}.json").read_text())


def test_quiz_numbers_are_those_of_the_bench_results_and_docs_they_cite():
    from course_lib.data.tokenization import KNOWN
    from course_lib.textbook.run import BookSettings

    en = {nb: _quiz_text(nb, "en") for nb in QUESTIONS}
    zh = {nb: _quiz_text(nb, "zh") for nb in QUESTIONS}
    cut = _bench("tokenizer")["wordpiece"]["padding_256"]["grouped_cut_vs_pad_to_max"]
    assert f"{cut:.0%} fewer" in en["02"] and f"减少了 {cut:.0%}" in zh["02"] and "tokenizer.json" in en["02"]
    assert f"{KNOWN['wordpiece']:,}" in en["02"] and f"{KNOWN['wordpiece']:,}" in zh["02"]
    minilm, bag = _bench("scaling")["minilm_16"], _bench("scaling")["bag"]
    rate, rounds = minilm["samples_per_s"], minilm["per_round_samples_per_s"]
    assert f"{minilm['speedup_2x1_vs_1x1']:.1f}x:" in en["03"] and f"{minilm['speedup_2x1_vs_1x1']:.1f} 倍" in zh["03"]
    assert f"{rate['2 ranks x 1 thread']:.2f} against {rate['1 rank x 1 thread']:.2f} samples/s" in en["03"]
    half, whole = statistics.mean(rounds["1 rank, half batch"]), statistics.mean(rounds["1 rank x 1 thread"])
    assert f"{half:.2f} against {whole:.2f} samples/s" in en["03"] and f"{half:.2f} 对 {whole:.2f}" in zh["03"]
    assert f"{bag['speedup_2x1_vs_1x1']:.2f}x" in en["03"] and f"{bag['speedup_2x1_vs_1x1']:.2f} 倍" in zh["03"]
    study = next(s for s in _bench("save_interval")["studies"] if s["mtbf_seconds"] == 20)
    walls = {p["every_steps"]: p["median_wall_seconds"] for p in study["points"]}
    often, best = min(walls), study["advice"]["optimum_steps"]
    assert (f"saving every {often} steps took {walls[often]:.1f} s against {walls[best]:.1f} s every {best} steps"
            in en["04"]) and f"{walls[often]:.1f} 秒" in zh["04"] and f"{walls[best]:.1f} 秒" in zh["04"]
    guarantee = (REPO / "docs" / "guarantee.md").read_text()
    repeated = re.search(r"\| `epoch-start` \|[^|]*\|[^|]*\| (\d+) / (\d+) \|", guarantee).group(2)
    for nb in ("04", "05"):
        assert f"{repeated} samples" in en[nb] and f"{repeated} 个样本" in zh[nb] and "docs/guarantee.md" in en[nb]
    book = BookSettings(run_dir="", data_file="")
    ranks, per_epoch = 2, book.train_reviews // 2 // book.batch_size
    assert f"{book.train_reviews:,} ({per_epoch} x {book.batch_size} x {ranks})" in en["03"]
    assert f"step {10 * per_epoch + 1}, the first step after the checkpoint" in en["05"]  # model_epoch_10.pth's next


def test_quiz_numbers_are_those_of_the_data():
    """The chapter's set() of the cleaned offline reviews, computed here (about 4 s)."""
    from course_lib.data.sources import clean_text, exact_dedup, raw_reviews

    texts, _ = raw_reviews("offline")
    exact = exact_dedup(texts, key=clean_text)
    assert f"{exact.n_dropped} identical copies ({exact.n_in:,} -> {exact.n_out:,})" in _quiz_text("01", "en")
    assert f"{exact.n_dropped} 条完全相同的副本（{exact.n_in:,} -> {exact.n_out:,}）" in _quiz_text("01", "zh")
    assert f"Removing {exact.n_dropped / exact.n_in:.1%} of the reviews" in _quiz_text("01", "en")


@pytest.mark.slow
def test_quiz_near_duplicate_count_is_that_of_the_data():
    """The near-duplicate step on what set() kept, as notebook 01 runs it (about 10 s)."""
    from course_lib.data.near_dup import find_near_duplicates
    from course_lib.data.sources import clean_text, exact_dedup, raw_reviews

    texts, _ = raw_reviews("offline")
    exact = exact_dedup(texts, key=clean_text)
    found = find_near_duplicates([clean_text(texts[i]) for i in exact.keep], threshold=0.8, progress=False)
    assert f"found {len(found.pairs)} more pairs among the {exact.n_out:,}" in _quiz_text("01", "en")
    assert f"又找出了 {len(found.pairs)} 对" in _quiz_text("01", "zh")


# ------------------------------------------------------------ grading a folder
def _submissions(root):
    from tests.exercise_answers.wrong05 import newest_as_string

    good, bad = root / "good", root / "bad"
    good.mkdir(parents=True)
    bad.mkdir()
    (good / "01.chunk.py").write_text(solution("01.chunk", reveal=True, lang="en"))
    (good / "05.newest.py").write_text(solution("05.newest", reveal=True, lang="en"))
    (bad / "01.chunk.py").write_text("def chunk_words(text, size, overlap):\n    w = text.split()\n"
                                     "    return [' '.join(w[i:i + size]) for i in range(0, len(w), size)]\n")
    import inspect

    cell = {"cell_type": "code", "metadata": {"tags": ["exercise"], "exercise": "05.newest"}, "outputs": [],
            "execution_count": None, "source": "import os\n\n" + inspect.getsource(newest_as_string).replace(
                "newest_as_string", "newest_checkpoint")}
    (bad / "05_interruption_resume.ipynb").write_text(json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4,
                                                                  "nbformat_minor": 5}))
    return root


def test_grading_a_folder_with_a_good_and_a_bad_learner(tmp_path):
    found = find_submissions(_submissions(tmp_path))
    assert sorted(found) == ["bad", "good"] and sorted(found["bad"]) == ["01.chunk", "05.newest"]
    rows = {(learner, ex): grade_one(learner, ex, path) for learner, subs in found.items() for ex, path in subs.items()}
    assert rows["good", "01.chunk"]["passed"] and rows["good", "05.newest"]["passed"]
    assert "share exactly" in rows["bad", "01.chunk"]["diagnosis"]
    assert "as a string" in rows["bad", "05.newest"]["diagnosis"]


@pytest.mark.slow
def test_pytest_grades_a_folder_from_the_command_line(tmp_path):
    folder = _submissions(tmp_path / "class")
    summary = tmp_path / "summary.json"
    proc = subprocess.run([sys.executable, "-m", "pytest", "tests/test_grade_submissions.py", "--exercises", str(folder),
                           "--exercises-json", str(summary), "-p", "no:cacheprovider", "-q"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stdout[-2000:]
    assert "good             01.chunk    PASS" in proc.stdout and "bad              05.newest   FAIL" in proc.stdout
    data = json.loads(summary.read_text())
    assert data["learners"] == {"bad": {"passed": 0, "checked": 2}, "good": {"passed": 2, "checked": 2}}


def test_carry_takes_a_function_defined_in_an_ipython_cell(tmp_path):
    """The real path: functions typed into notebook cells (IPython keeps their source)."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_cell("import re as regex\nSIZE = 3\ndef helper(t):\n    return regex.sub('a', 'b', t)\n")
    shell.run_cell("def chunk_words(text, size, overlap):\n    return [helper(text)] * SIZE\n")
    module = load_module(write_module({"chunk_words": shell.user_ns["chunk_words"]}, tmp_path / "cell.py"))
    assert module.chunk_words("banana", 1, 0) == ["bbnbnb"] * 3


def test_the_notebooks_unfilled_scaffolds_are_found_and_fail_with_a_diagnosis(tmp_path):
    """The notebooks as a learner receives them, graded: every exercise cell is found by its tag,
    and an unfilled scaffold gets a diagnosis, not a crash of the check."""
    import shutil

    learner = tmp_path / "class" / "new-learner"
    learner.mkdir(parents=True)
    for nb in (REPO / "notebooks").glob("0*.ipynb"):
        shutil.copy(nb, learner)
    found = find_submissions(tmp_path / "class")["new-learner"]
    assert sorted(found) == sorted(EXERCISES)
    for exercise in FAST:
        row = grade_one("new-learner", exercise, found[exercise])
        assert not row["passed"] and row["diagnosis"] and "Traceback" not in row["diagnosis"], row


def test_carry_finds_a_module_used_only_inside_a_comprehension(tmp_path):
    from tests.exercise_answers.wrong05 import resume_no_fallback

    text = write_module({"resume_training": resume_no_fallback}, tmp_path / "m.py").read_text()
    assert "import re" in text and "def _by_number" in text
