"""What the prose says, checked against where it comes from (pure reads of files, seconds): the
docs' counts against the exercise registry, a quiz's answer against the notebook's own words, the
labels of the chapter map in the teacher's guides, the reconstruction named as one, figures
against the result files they cite, and the boxes that say where the notebooks' scale stops."""
import json
import re
import statistics
import sys
from pathlib import Path

import pytest

from course_lib.exercises import EXERCISES
from course_lib.exercises.quiz import QUESTIONS

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import chapter  # noqa: E402  (tools/chapter.py)

REPO = Path(__file__).resolve().parent.parent
NUMBERS = {"2": "two", "3": "three", "4": "four"}
NUMBERS_ZH = {"2": "两", "3": "三", "4": "四"}


def cells(name: str, lang: str) -> dict[str, str]:
    path = REPO / "notebooks" / (name if lang == "en" else f"zh/{name}")
    return {c["id"]: "".join(c["source"]) for c in json.loads(path.read_text(encoding="utf-8"))["cells"]}


def bench(name: str) -> dict:
    return json.loads((REPO / "bench" / "results" / f"{name}.json").read_text())


# ------------------------------------------------------------ counts in the docs
def test_docs_count_the_exercises_and_questions_the_registry_holds():
    """docs/exercises.md: how many exercises each notebook has, how many questions a quiz has, and a
    row for every registered exercise, in both its parts."""
    per_notebook = {nb: sum(e.id.startswith(nb) for e in EXERCISES.values()) for nb in chapter.NOTEBOOKS}
    common = statistics.mode(per_notebook.values())
    odd = {nb: n for nb, n in per_notebook.items() if n != common}
    same = [nb for nb, n in per_notebook.items() if n == common]
    assert same == [f"0{i}" for i in range(1, len(same) + 1)], per_notebook  # the phrase below says "01-0N"
    en_phrase = f"{NUMBERS[str(common)]} in notebooks {same[0]}-{same[-1]},\n" + ", ".join(
        f"{NUMBERS[str(n)]} in {nb}" for nb, n in odd.items())
    zh_phrase = f"{same[0]}-{same[-1]} 每个 notebook {NUMBERS_ZH[str(common)]}道，" + "，".join(
        f"{nb} 有{NUMBERS_ZH[str(n)]}道" for nb, n in odd.items())
    lo, hi = min(map(len, QUESTIONS.values())), max(map(len, QUESTIONS.values()))
    text = (REPO / "docs" / "exercises.md").read_text(encoding="utf-8")
    en, zh = text.split("## 中文", 1)
    assert en_phrase in en, en_phrase
    assert zh_phrase in zh, zh_phrase
    assert f"({lo}-{hi} questions" in en and f"（{lo}-{hi} 题" in zh, (lo, hi)
    for part in (en, zh):
        rows = set(re.findall(r"^\| `(\d\d\.\w+)` \|", part, re.M))
        assert rows == set(EXERCISES), sorted(rows ^ set(EXERCISES))
    for guide, phrase in (("teacher-guide.md", "two per notebook, three in 05"), ("teacher-guide.zh-CN.md", "05 有三道")):
        assert odd == {"05": 3} and phrase in (REPO / "docs" / guide).read_text(encoding="utf-8"), guide


def test_the_teachers_guides_name_every_label_of_the_chapter_map():
    en = (REPO / "docs" / "teacher-guide.md").read_text(encoding="utf-8").replace("\n", " ")
    zh = (REPO / "docs" / "teacher-guide.zh-CN.md").read_text(encoding="utf-8")
    for label_en, label_zh in chapter.KINDS.values():
        assert f"*{label_en}*" in en, label_en
        assert f"\"{label_zh}\"" in zh, label_zh
    assert "已验证" not in zh  # 验证 is validation; the notebooks say 成立


# ------------------------------------------------------------ a quiz says what its notebook shows
def right_answer(notebook: str, number: int):
    return next(o for o in QUESTIONS[notebook][number - 1][1] if o.right)


# (quiz, question) -> (notebook, cell, the same finding in English, in Chinese), in the quiz's right option
# (text or explanation) and in the notebook's cell, both editions; tests/test_notebooks.py checks the
# executed result itself (every resume mode passes the chapter's test)
SAME_FINDING = {
    ("05", 2): ("05_interruption_resume.ipynb", "s3-reading", ("every mode passed", "Every resume passes"),
                ("每种方式都通过", "每种续训都通过")),
    ("03", 2): ("03_ddp_launch.ipynb", "s3-throughput-reading", ("0.90x", "0.90x"), ("0.90 倍", "0.90 倍")),
    ("03", 4): ("03_ddp_launch.ipynb", "s2-read", ("rank 0", "# kit"), ("Rank 0", "# kit")),
}


@pytest.mark.parametrize("quiz_id", sorted(SAME_FINDING))
def test_a_quiz_answer_states_what_its_notebook_says(quiz_id):
    name, cell, (quiz_en, nb_en), (quiz_zh, nb_zh) = SAME_FINDING[quiz_id]
    answer = right_answer(*quiz_id)
    assert quiz_en in answer.text[0] + answer.why[0] and quiz_zh in answer.text[1] + answer.why[1], answer
    assert nb_en in cells(name, "en")[cell] and nb_zh in cells(name, "zh")[cell], cell


def test_the_learners_ratio_and_the_benchmarks_are_told_apart():
    """03 §3: the learner's setting (32 reviews per rank) is 0.90x by scaling.json's own timings; its
    0.52x is the global batch fixed at 64. Every figure the cell states is the file's."""
    scaling = bench("scaling")
    rounds = scaling["bag"]["per_round_samples_per_s"]
    per_rank = statistics.mean(rounds["2 ranks x 1 thread"]) / statistics.mean(rounds["1 rank, half batch"])
    split = scaling["bag"]["step_seconds_2_ranks"]
    figures = {f"{per_rank:.2f}", f"{scaling['bag']['speedup_2x1_vs_1x1']:.2f}",
               f"{scaling['minilm_16']['speedup_2x1_vs_1x1']:.1f}", f"{split['compute']:.3f}",
               f"{split['communication + sync']:.3f}"}
    for lang in ("en", "zh"):
        text = cells("03_ddp_launch.ipynb", lang)["s3-throughput-reading"]
        stated = set(re.findall(r"\d+\.\d+", text)) - {"2.00"}  # 2.00x: the rule's own ratio
        assert stated == figures, (lang, stated ^ figures)
        assert "64" in text and "32" in text and "bench/results/scaling.json" in text


def test_the_topology_table_is_the_scaling_labs_and_in_the_core_path():
    """03 §6: one all-reduce over each link, drawn by the scaling lab (the numbers scaling.json
    records), in the core path; the step it is set beside is scaling.json's."""
    import sys

    sys.path.insert(0, str(REPO / "tools"))
    from chapter_map import kind_of

    from course_lib.lab.scaling import allreduce_table

    links = bench("scaling")["allreduce"]
    for model in ("bag", "minilm"):
        assert allreduce_table(model)["seconds"] == links[model]["seconds"], model
    compute = f"{bench('scaling')['bag']['step_seconds_2_ranks']['compute']:.3f}"
    for lang in ("en", "zh"):
        path = REPO / "notebooks" / ("" if lang == "en" else "zh") / "03_ddp_launch.ipynb"
        section = None
        for c in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            heading = re.match(r"##\s+(.*)", "".join(c["source"])) if c["cell_type"] == "markdown" else None
            section = heading.group(1) if heading else section
            if c["id"] == "s8-links-table":
                assert "".join(c["source"]).startswith("scaling.allreduce_frame(") and kind_of(section) == "core"
        reading = cells("03_ddp_launch.ipynb", lang)["s8-links-reading"]
        assert compute in reading and "bench/results/scaling.json" in reading, lang


# ------------------------------------------------------------ the reconstruction, named as one
PAGES = [REPO / "README.md", REPO / "README.zh-CN.md", *sorted((REPO / "docs").glob("*.md")), REPO / "CONTRIBUTING.md"]


def prose():
    for path in PAGES:
        yield path.name, path.read_text(encoding="utf-8")
    for path in sorted((REPO / "notebooks").glob("**/*.ipynb")):
        for c in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if c["cell_type"] == "markdown":
                yield f"{path.parent.name}/{path.name}:{c['id']}", "".join(c["source"])


def test_the_kits_loop_is_called_a_reconstruction_of_the_chapters():
    """The chapter prints its loop in parts (and part of 11.5 as images): what runs is the kit's
    reconstruction (course_lib.textbook.DEVIATIONS), and every page calls it that."""
    found = []
    for where, text in prose():
        flat = re.sub(r"\s+", " ", text)
        for m in re.finditer(r"the chapter's (?:own )?loop", flat, re.I):
            if not flat[:m.start()].endswith(("reconstruction of ", "reconstruction of the kit's ")):
                found.append((where, flat[max(0, m.start() - 40):m.end()]))
        found += [(where, m.group(0)) for m in re.finditer(r"(?<!重建的)(?:本章|原书)的(?:训练)?循环", flat)]
    assert not found, found  # BENCHMARKS.md is written by bench/report.py and is not read here


def test_the_two_choices_that_shape_the_audits_verdict_are_deviations_shown_in_03():
    import inspect

    from course_lib import textbook
    from course_lib.textbook import __main__ as script

    rows = {row[0][0]: row for row in textbook.DEVIATIONS}
    assert {"seed", "the file resumed from"} <= set(rows)
    assert "torch.manual_seed(settings.seed)" in inspect.getsource(textbook.book.train)  # what the row says
    assert "torch.manual_seed(settings.seed)" in rows["seed"][2][0]
    assert "list(checkpoints(a.run_dir))[-1:]" in inspect.getsource(script.main)  # the newest by its number
    assert "model_epoch_10.pth" in rows["the file resumed from"][1][0]
    for lang in ("en", "zh"):
        assert cells("03_ddp_launch.ipynb", lang)["s2-deviations"].strip() == "textbook.deviations()"


# ------------------------------------------------------------ where the toy scale stops
BOX = {"en": "> **Where this stops", "zh": "> **边界"}


@pytest.mark.parametrize("name", ["04_monitoring_checkpoints.ipynb", "05_interruption_resume.ipynb"])
def test_a_box_says_where_this_stops_and_cites_each_point(name):
    for lang in ("en", "zh"):
        box = cells(name, lang)["s6-limits"]
        assert box.startswith(BOX[lang]), box[:40]
        points = [line for line in box.splitlines() if line.startswith("> - ")]
        assert len(points) >= 2 and all("](https://" in p for p in points), points
    joined = cells(name, "en")["s6-limits"]
    wanted = {"04": ("FSDP", "torch.distributed.checkpoint", "rename", "fsync", "NFS", "Lustre", "S3"),
              "05": ("resharding", "DataLoader", "streaming", "CPUs", "NCCL")}[name[:2]]
    assert all(w in joined for w in wanted), [w for w in wanted if w not in joined]


def test_the_5_tb_checkpoint_is_set_beside_what_rank_0_alone_would_mean():
    """04's box: the figures of §5's table (LongRun) and the Llama 3 paper's network, by arithmetic."""
    from course_lib.beyond.real_scale import LongRun

    run = LongRun()
    tb = run.checkpoint_tb
    link_gb_per_s = 400 / 8  # one GPU's 400 Gb/s link (the paper, section 3.3.1)
    figures = [f"{tb:.1f} TB", f"{tb * 1e12 / 80e9:.0f} times", f"{tb * 1e3 / link_gb_per_s:.0f} s",
               f"{tb / run.value('write_tb_per_s'):.1f} s"]
    assert round(tb) == 5  # 04 §5: "a checkpoint of about 5 TB"
    en = cells("04_monitoring_checkpoints.ipynb", "en")
    zh = cells("04_monitoring_checkpoints.ipynb", "zh")
    for figure in figures:
        assert figure in en["s6-limits"], figure
        assert figure.split()[0] in zh["s6-limits"], figure
    assert "on one local file system" in en["s4-protocol"] and "同一个本地文件系统" in zh["s4-protocol"]


# ------------------------------------------------------------ validation seen during training
def test_the_core_path_of_04_validates_while_it_trains():
    en = cells("04_monitoring_checkpoints.ipynb", "en")
    params = {}
    exec(en["params"], {}, params)  # plain constants
    steps = params["TRAIN_LIMIT"] * 4 // 5 // 64 * params["EPOCHS"]  # 80% trains, a global batch of 64
    assert 0 < params["EVAL_EVERY"] <= steps // 3, (params["EVAL_EVERY"], steps)  # several points, not one at the end
    assert "eval_every_steps=EVAL_EVERY" in en["imports"] and '"val/accuracy"' in en["s2-curves"]
    for lang in ("en", "zh"):
        s2 = cells("04_monitoring_checkpoints.ipynb", lang)["s2"]
        assert "EVAL_EVERY" in s2 and "val/accuracy" in s2


# ------------------------------------------------------------ the audit on the learner's own loop
def test_more_to_try_in_05_audits_a_loop_the_learner_writes():
    from resume_audit.findings import KINDS

    from course_lib.cli import build_parser

    command = "python -m course_lib audit -- python my_train.py --out {run}"
    args = build_parser().parse_args(command.split()[3:])
    starts = 2 + args.faults + args.faults // args.per_run
    gpu = ("nondeterministic-cuda", "CUBLAS_WORKSPACE_CONFIG=:4096:8", "torch.use_deterministic_algorithms(True)")
    assert gpu[0] in KINDS
    for lang, shorten in (("en", "2 + faults + runs"), ("zh", "2 + 故障数 + 训练次数")):
        more = cells("05_interruption_resume.ipynb", lang)["more"]
        item = next(i for i in re.split(r"\n(?=\d+\. )", more) if command in i)
        assert shorten in item and f"{starts}" in item and all(g in item for g in gpu), item


def test_the_audited_exercises_count_the_starts_their_checks_make():
    """1 (the loop is seeded: one run before the faults) + faults + 1 (one run struck by every
    fault, per_run=FAULTS), in words in both editions."""
    from course_lib.exercises import audited

    for exercise, notebook, cell in (("04.save", "04_monitoring_checkpoints.ipynb", "ex-04-save"),
                                     ("05.resume", "05_interruption_resume.ipynb", "ex-05-resume"),
                                     ("05.audit", "05_interruption_resume.ipynb", "ex-05-audit")):
        faults = audited.faults_for(exercise, seed=0)
        count = faults if isinstance(faults, int) else len(faults)
        assert count <= audited.FAULTS, "one run takes every fault"
        starts = 1 + count + 1
        en, zh = {4: ("four times", "四次"), 5: ("five times", "五次"), 6: ("six times", "六次")}[starts]
        assert en in cells(notebook, "en")[cell] and zh in cells(notebook, "zh")[cell], (exercise, starts)


# ------------------------------------------------------------ no uncited figure in an exercise's prompt
def test_an_exercise_prompt_states_no_uncited_time():
    time = re.compile(r"\d+(?:\.\d+)? ?(?:s|seconds?|min|minutes?|ms|milliseconds)\b|\d+(?:\.\d+)? ?(?:秒|分钟|毫秒)")
    for name in chapter.NOTEBOOKS.values():
        for lang in ("en", "zh"):
            for cid, text in cells(name, lang).items():
                if cid.startswith("ex-") and time.search(text):
                    assert re.search(r"bench/results/|BENCHMARKS\.md|docs/exercises\.md", text), (name, lang, cid)


# ------------------------------------------------------------ "Used in notebook NN (§K)" stays true
def _code_by_section(name: str) -> dict[str, str]:
    """The English edition's code, by section: "1", "2", ... or "deep-A", ... ("opening" before the first)."""
    found, section = {}, "opening"
    for cell in json.loads((REPO / "notebooks" / name).read_text(encoding="utf-8"))["cells"]:
        text = "".join(cell["source"])
        if cell["cell_type"] == "markdown" and (heading := re.match(r"##\s+(?:(\d+)\.|Optional deep-dive ([A-Z]))?", text)):
            section = heading[1] or (heading[2] and f"deep-{heading[2]}") or "other"
        elif cell["cell_type"] == "code":
            found[section] = found.get(section, "") + text + "\n"
    return found


REFERENCE = re.compile(r"[Nn]otebook (\d\d)(?: \(§(\d+)\)|, §(\d+)|,? \(?optional deep-dive ([A-Z])\)?)")


def test_what_the_package_says_a_notebook_uses_is_used_there():
    """A docstring's "Used in notebook 05 (§4)" names a section whose code calls it (renumbered
    sections leave no stale pointer); a module's or a document's names a section that exists."""
    import ast

    by_name = {p.name[:2]: _code_by_section(p.name) for p in (REPO / "notebooks").glob("*.ipynb")}
    wrong = []
    for path in sorted((REPO / "course_lib").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in [tree, *ast.walk(tree)]:
            if not isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)):
                continue
            for m in REFERENCE.finditer(ast.get_docstring(node) or ""):
                section = m[2] or m[3] or f"deep-{m[4]}"
                code = by_name[m[1]].get(section)
                if code is None or (not isinstance(node, ast.Module) and not re.search(rf"\b{node.name}\b", code)):
                    wrong.append(f"{path.relative_to(REPO)}: {getattr(node, 'name', 'module')} -> {m[0]}")
    zh = re.compile(r"notebook (\d\d) 第 (\d+) 节")
    for doc in [REPO / "README.md", REPO / "README.zh-CN.md", *sorted((REPO / "docs").glob("*.md"))]:
        text = doc.read_text(encoding="utf-8")
        for nb, section in [(m[1], m[2] or m[3] or f"deep-{m[4]}") for m in REFERENCE.finditer(text)] + zh.findall(text):
            if section not in by_name[nb]:
                wrong.append(f"{doc.name}: notebook {nb}, {section}")
    assert not wrong, wrong
