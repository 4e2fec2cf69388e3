"""Exercises a learner can check: every check passes its reference solution and fails the typical
wrong answers with the right diagnosis; the 04/05 checks kill the learner's training for real. An
answer is shown only when asked for, no hint gives the code away, and the quizzes' numbers are
those of their sources."""
import functools
import importlib
import inspect
import json
import os
import re
import statistics
import subprocess
import sys

import pytest

from course_lib.config import TrainConfig
from course_lib.exercises import EXERCISES, check, hint, quiz, solution, solution_of
from course_lib.exercises.carry import CannotCarry, load_module, write_module
from course_lib.exercises.quiz import QUESTIONS, options
from tests.conftest import REPO
from tests.grading import find_submissions, grade_one
from tests.helpers import solution_lines

# the learner's code runs in spawned processes: the checks that call carry_for_check (ex03, audited.py)
SPAWNING = {"03.split", "03.worker", "04.save", "05.resume", "05.audit"}
FAST = sorted(set(EXERCISES) - SPAWNING)


# wrong answers whose finding another one in CI already reaches by the same path (CI's 15 minutes): -m exhaustive
EXHAUSTIVE = {"04.save-weights only", "04.save-no RNG", "04.save-no position in the epoch",
              "04.save-the old one removed before the rename",
              "04.save-a backup, then copied over the checkpoint", "04.save-one step late",
              "04.save-written in place, killed during the save", "04.save-copied over the checkpoint",
              "05.resume-no RNG",  # the RNG's finding, its line and diagnosis: 04.save's chapter's three items
              "04.save-temporary file + os.rename"}  # passes the way the reference solution does


def _wrong(exercise):
    module = importlib.import_module(f"tests.exercise_answers.wrong{exercise[:2]}")
    ids = [(f"{exercise}-{label}", funcs, expected) for label, funcs, expected in module.WRONG.get(exercise, [])]
    return [pytest.param(exercise, funcs, expected, id=i, marks=pytest.mark.exhaustive if i in EXHAUSTIVE else ())
            for i, funcs, expected in ids]


def _also_right():
    from tests.exercise_answers.other_right import RIGHT

    return [pytest.param(exercise, funcs, id=f"{exercise}-{label}",
                         marks=pytest.mark.exhaustive if f"{exercise}-{label}" in EXHAUSTIVE else ())
            for exercise, answers in RIGHT.items() for label, funcs in answers]


@functools.cache
def solved(exercise: str, lang: str = "en"):
    """The reference solution's check, once per exercise and language (per worker): several tests read it."""
    return check(exercise, *solution_of(exercise), seed=11, lang=lang)


def test_every_notebook_has_two_code_exercises_with_hints_and_a_solution():
    for nb in ("01", "02", "03", "04", "05"):
        mine = [e for e in EXERCISES.values() if e.id.startswith(nb)]
        assert len(mine) >= 2 and nb in QUESTIONS and 3 <= len(QUESTIONS[nb]) <= 5
        for e in mine:
            assert len(e.hints) >= 2 and solution_of(e.id)


@pytest.mark.parametrize("exercise", FAST)
def test_the_reference_solution_passes(exercise):
    result = solved(exercise)
    assert result.passed, result.diagnosis


@pytest.mark.parametrize("exercise,funcs,expected", [p for ex in FAST for p in _wrong(ex)])
def test_a_wrong_answer_fails_with_its_diagnosis(exercise, funcs, expected):
    result = check(exercise, *funcs, seed=11, lang="en")
    assert not result.passed and expected in result.diagnosis, result.diagnosis


@pytest.mark.slow  # 05.audit's: -m exhaustive (its check is 04.save's and 05.resume's, check_by_audit, whose reference
# solutions pass in CI; its own check fails in CI where notebook 05 runs it on the chapter's save)
@pytest.mark.parametrize("exercise", [pytest.param(e, marks=pytest.mark.exhaustive if e == "05.audit" else ())
                                      for e in sorted(SPAWNING)])
def test_the_reference_solution_passes_in_real_processes(exercise):
    result = solved(exercise)
    assert result.passed, result.diagnosis
    if exercise == "05.audit":  # the check its notebook describes: one run, 4 faults, no crash points beside them
        assert "every one of 4 faults" in result.diagnosis, result.diagnosis


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


def test_the_audited_loop_reads_what_a_load_returns():
    """The progress dict as saved; the chapter's epoch alone (it starts over); None (the run
    starts over): the audit names what each loses. Anything else is a clear error."""
    from course_lib.exercises.audit_loop import place

    assert place({"epoch": 2, "step_in_epoch": 5, "global_step": 29}) == (2, 5)
    assert place(1) == (1, 0) and place(None) is None
    with pytest.raises(TypeError, match="progress dict as saved"):
        place((1, 5))


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


def _notebook_stubs(tmp_path) -> dict:
    """Each exercise's answer cell as the notebooks hand it out (unfilled), written to a module file
    (a spawning check carries its functions' source from there), -> the functions check() takes."""
    stubs = {}
    for path in sorted((REPO / "notebooks").glob("0*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if "exercise" in cell["metadata"].get("tags", []):
                exercise = re.fullmatch(r"ex-(\d\d)-(\w+)-answer", cell["id"]).expand(r"\1.\2")
                module = load_module(_write(tmp_path / f"stub_{exercise.replace('.', '_')}.py", "".join(cell["source"])))
                stubs[exercise] = tuple(getattr(module, name) for name in EXERCISES[exercise].functions)
    assert set(stubs) <= set(EXERCISES)
    return stubs


def _write(path, text):
    path.write_text(text)
    return path


ANSWERS = {"05.newest": "model_epoch_14.pth"}  # what the reference finds with seed 11 (its folder comes from the seed)


def _assert_no_answer_given(exercise, stub_result, reference_result):
    assert not stub_result.passed
    answer = ANSWERS.get(exercise)
    if answer is not None:
        assert answer in reference_result.diagnosis, reference_result.diagnosis
        assert answer not in stub_result.diagnosis, stub_result.diagnosis
    assert not [line for line in solution_lines(exercise) if line in stub_result.diagnosis], stub_result.diagnosis


@pytest.mark.parametrize("exercise", FAST)
def test_a_check_on_the_unfilled_answer_fails_without_giving_the_answer_away(exercise, tmp_path):
    """What a learner gets for running the check before writing anything: where to start, not the answer.
    (The exercises that spawn processes: tests/test_notebooks.py, on the checks Run All makes.)"""
    stubs = _notebook_stubs(tmp_path)
    if exercise not in stubs:
        pytest.skip(f"{exercise} has no answer cell in a notebook yet")
    stub = stubs[exercise]
    _assert_no_answer_given(exercise, check(exercise, *stub, seed=11, lang="en"),
                            solved(exercise))
    _assert_no_answer_given(exercise, check(exercise, *stub, seed=11, lang="zh"),
                            solved(exercise, "zh"))


@pytest.mark.parametrize("exercise", ["04.save", "05.resume"])
def test_an_audited_checks_unfilled_answer_is_told_at_once(exercise, tmp_path):
    """Run All before writing anything: the audited checks say so before any process starts (an
    audit of the scaffold took 10 s of real kills to find nothing saved or loaded), name every
    function still to write, and give nothing away."""
    stub = _notebook_stubs(tmp_path)[exercise]
    names = EXERCISES[exercise].functions
    for lang, words in (("en", f"not written yet: {', '.join(names)}. "), ("zh", f"还没有写好：{'、'.join(names)}。")):
        result = check(exercise, *stub, seed=11, lang=lang)
        assert not result.passed and words in result.diagnosis and result.seconds < 1, result
        assert not [line for line in solution_lines(exercise) if line in result.diagnosis], result


def test_only_a_body_of_fixed_values_is_unwritten():
    from course_lib.exercises.audited import unwritten

    def docstring_only(path):
        """The doc."""

    def ellipsis(path):
        ...

    def fixed_dict(path):
        # your code
        return {"epoch": 0, "step_in_epoch": 0, "global_step": 0}

    def bound_then_returned(path):
        kept = []
        return kept

    def calls(path):
        os.replace(path + ".tmp", path)

    def uses_its_argument(path):
        return os.path.exists(path)

    def unusual_indent(path):  # its source does not dedent to a parsable def: left to the audit
        text = """
a line at column 0"""
        return text

    scaffolds = [docstring_only, ellipsis, fixed_dict, bound_then_returned]
    written = [calls, uses_its_argument, unusual_indent]
    assert unwritten({f.__name__: f for f in scaffolds + written}) == [f.__name__ for f in scaffolds]


def test_run_all_prints_no_hint_and_no_solution():
    """A hint comes when asked for: no code cell of either edition calls hint() or solution() (the
    exercises' introduction says how to ask); the executed notebooks are checked in test_notebooks."""
    for path in sorted((REPO / "notebooks").glob("**/0*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] != "code":
                continue
            code = "\n".join(line.split("#")[0] for line in "".join(cell["source"]).splitlines())
            assert not re.search(r"\b(hint|solution)\(", code), (path.name, cell["id"])
            assert "reveal=True" not in code, (path.name, cell["id"])


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
def test_quiz_explains_every_option_after_a_choice(notebook, lang):
    q = quiz(notebook, lang=lang)
    pick = 1 if lang == "zh" else 0
    for number, item in enumerate(q.items, 1):
        item.button.click()
        assert item.feedback.value in ("Choose an answer first.", "先选一个答案。")
        for option, answer in zip(item.choice.options, options(notebook, number), strict=True):
            assert option == answer.text[pick] and answer.why[pick] not in option
            item.choice.value = option
            item.button.click()
            assert item.chosen.right == answer.right and answer.why[pick] in item.feedback.value
            assert ("Right." in item.feedback.value or "正确" in item.feedback.value) == answer.right


def test_quiz_options_are_shuffled_the_same_way_in_every_run_and_both_editions():
    firsts = []
    for notebook, questions in QUESTIONS.items():
        en, again, zh = quiz(notebook, lang="en"), quiz(notebook, lang="en"), quiz(notebook, lang="zh")
        for number, (a, b, c) in enumerate(zip(en.items, again.items, zh.items, strict=True), 1):
            assert a.choice.options == b.choice.options
            assert list(c.choice.options) == [answer.text[1] for answer in a.answers]  # the same order in Chinese
            assert sorted(map(repr, a.answers)) == sorted(map(repr, questions[number - 1][1]))  # each keeps its why
            firsts.append(a.answers[0].right)
    assert 0 < sum(firsts) < len(firsts) / 2  # the right answer is not always the first option
    script = "from course_lib.exercises.quiz import QUESTIONS, options\nprint([[a.text[0] for a in options(nb, i + 1)] " \
             "for nb in sorted(QUESTIONS) for i in range(len(QUESTIONS[nb]))])"
    here = [[a.text[0] for a in options(nb, i + 1)] for nb in sorted(QUESTIONS) for i in range(len(QUESTIONS[nb]))]
    other = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True,
                           env={**os.environ, "PYTHONHASHSEED": "12345"})
    assert other.stdout.strip() == repr(here)  # another interpreter, another hash seed: the same order


def test_quiz_options_cannot_be_told_apart_by_their_length():
    """At least three options a question, one of them right; within a question the longest option is at
    most twice the shortest (in each edition); the right one is the longest (ties included) in no more
    than a third of the questions, in each edition."""
    questions = [opts for qs in QUESTIONS.values() for _, opts in qs]
    for opts in questions:
        assert len(opts) >= 3 and sum(o.right for o in opts) == 1, [o.text[0] for o in opts]
        for pick in (0, 1):
            lengths = [len(o.text[pick]) for o in opts]
            assert max(lengths) <= 2 * min(lengths), [o.text[pick] for o in opts]
    for pick in (0, 1):
        longest = sum(len(next(o for o in opts if o.right).text[pick]) == max(len(o.text[pick]) for o in opts)
                      for opts in questions)
        assert longest <= len(questions) / 3, (pick, longest, len(questions))


def _bench(name: str) -> dict:
    return json.loads((REPO / "bench" / "results" / f"{name}.json").read_text())


REFERENCE = re.compile(r"(?:[Ss]ections?|[Ss]tations?) \d+|第 \d+ (?:节|站)|\b0\d\.\w+")
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def _numbers(text: str) -> list[str]:
    """The numbers a learner reads in ``text``; a reference to a section, station or exercise is not one."""
    return NUMBER.findall(REFERENCE.sub(" ", text))


def per_rank_32(scaling: dict) -> float:
    """2 ranks against 1 at the same batch per rank (32, the reconstruction's and section 3's): the
    benchmark's 2-rank rounds (global batch 64) over its 1-rank rounds at half that batch."""
    rounds = scaling["bag"]["per_round_samples_per_s"]
    return statistics.mean(rounds["2 ranks x 1 thread"]) / statistics.mean(rounds["1 rank, half batch"])


def _quoted_numbers() -> dict[str, str]:
    """Every number a quiz may state -> where it comes from, each checked against that source here."""
    from course_lib.data.tokenization import KNOWN
    from course_lib.textbook.run import BookSettings

    book = BookSettings(run_dir="", data_file="")
    per_epoch = book.train_reviews // 2 // book.batch_size
    assert (per_epoch, book.batch_size, book.train_reviews, book.epochs) == (16, 32, 1024, 10)  # the chapter's run
    scaling, study = _bench("scaling"), next(s for s in _bench("save_interval")["studies"] if s["mtbf_seconds"] == 20)
    walls = {p["every_steps"]: p["median_wall_seconds"] for p in study["points"]}
    often, best = min(walls), study["advice"]["optimum_steps"]
    sourced = {
        f"{KNOWN['wordpiece']:,}": "bert-base-uncased's vocabulary, checked when it loads (notebook 02 shows it)",
        f"{per_epoch}": "the chapter's Step [k/16]", f"{book.batch_size}": "the reconstruction's batch per rank",
        f"{book.train_reviews:,}": "16 steps x 32 x 2 ranks", f"{book.train_reviews // 2}": "one rank's share",
        f"{2 * book.train_reviews:,}": "twice the epoch (a wrong option)",
        f"{scaling['bag']['speedup_2x1_vs_1x1']:.2f}": "bench/results/scaling.json, bag",
        f"{per_rank_32(scaling):.2f}": "bench/results/scaling.json, bag at 32 reviews per rank (section 3's setting)",
        f"{TrainConfig().global_batch_size}": "the global batch the scaling benchmark fixes",
        f"{scaling['minilm_16']['speedup_2x1_vs_1x1']:.1f}": "bench/results/scaling.json, minilm",
        f"{scaling['bag']['step_seconds_2_ranks']['compute']:.3f}": "scaling.json, a 2-rank bag step's compute",
        f"{scaling['allreduce']['bag']['seconds']['1 GbE']:.2f}": "scaling.json, bag's all-reduce over 1 GbE",
        f"{study['mtbf_seconds']}": "bench/results/save_interval.json, its MTBF",
        f"{often}": "save_interval.json, most often",
        f"{walls[often]:.1f}": "save_interval.json", f"{best}": "save_interval.json, the optimum",
        f"{walls[best]:.1f}": "save_interval.json",
    }
    chapter = {"10": "the chapter's save_interval and its model_epoch_10.pth", "12": "the book's run, killed in epoch 12",
               "8": "a file name of the question's example", "20": "a file name of the question's example",
               "50": "the question's chunk size", "40": "50 - 10", "0": "a mask value / the epoch without set_epoch",
               "1": "a mask value / epoch 1", "2": "two ranks", "2.6": "the PyTorch version that changed the default"}
    return {**chapter, **sourced}


def test_quiz_numbers_are_in_step_with_their_sources():
    """Every number of every question, option and explanation is the chapter's, follows from it, or is a
    benchmark figure cited with its file (and equal to it there); both editions state the same numbers."""
    allowed = _quoted_numbers()
    for notebook, questions in QUESTIONS.items():
        for question, opts in questions:
            texts = [question] + [t for o in opts for t in (o.text, o.why)]
            for en, zh in texts:
                assert set(_numbers(en)) == set(_numbers(zh)), (en, zh)
                unknown = [n for n in _numbers(en) if n not in allowed]
                assert not unknown, f"quiz {notebook}: {unknown} in {en!r} have no source"
                if any(n in _numbers(en) for n in ("0.52", "0.90", "2.1", "82.2", "55.5")):
                    assert "bench/results/" in en and "bench/results/" in zh, en  # a benchmark figure names its file


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
    from tests.exercise_answers.wrong05 import newest_without_fallback

    text = write_module({"newest_checkpoint": newest_without_fallback}, tmp_path / "m.py").read_text()
    assert "import re" in text and "import os" in text
