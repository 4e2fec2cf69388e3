"""One glossary is the source of the Chinese edition's terms (docs/glossary.zh-CN.md): the
variants it marks in bold ("never, in any sense") appear nowhere in the Chinese notebooks,
READMEs, docs or the labels the code prints; and what a learner reads from the package (the
Chinese strings and comments of course_lib: quizzes, check messages, hints, exercise titles,
widget labels, the reference solutions) and docs/exercises.md uses none of the third column's
variants, bold or not. Quotations of the chapter (「...」) and code (`...`) are exempt."""
import ast
import io
import json
import re
import tokenize
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GLOSSARY = REPO / "docs" / "glossary.zh-CN.md"
CJK = re.compile(r"[\u4e00-\u9fff]")

# Variants of the third column that the check below leaves out, and why. A variant with a
# qualifier other than "（单独出现）" ("类别（指标签时）", "切分（"切分"专指 chunking）") is banned in one
# sense only, which a word search cannot tell: those are left out as a group, by their qualifier.
ONE_CHARACTER = "a single character is part of too many ordinary words (关 in 相关, 带 in 带来, 批 in 批评, 轮 in 轮流)"
ORDINARY = {  # the glossary bans these for one concept; each is also the plain word for another
    "权重": "a model's weights (the row bans it for a labelling rule's priority)",
    "位置": "a position: in the epoch, in a row of tokens (the row bans it for a character span)",
    "字典": "a Python dict (the row bans it for the vocabulary)",
    "尝试": "the verb 'to try' (the row bans the noun for an attempt, a run's Nth start)",
    "错误": "'wrong' and 'an error' (the row bans it for a failure of the machine)",
    "同步": "'together' (同步下降); the row bans it for a barrier when alone",
}
EXTRA = {  # what the glossary says outside its table, or a shorter form of a banned variant
    "笔记本": "its header: the Chinese edition writes notebook",
    "改名": "原子改名 without 原子: rename is 重命名 (原子重命名)",
}
KILL = re.compile(r"(?<![\w.-])kill(?![\w(=-])")  # "kill" in Chinese prose: 杀掉 (SIGKILL, kill_step, os.kill are code)


def rows() -> list[list[str]]:
    lines = [line for line in GLOSSARY.read_text(encoding="utf-8").splitlines() if line.startswith("| ")]
    return [[cell.strip() for cell in line.split("|")[1:-1]] for line in lines[2:]]


def never() -> set[str]:
    return {v for row in rows() for v in re.findall(r"\*\*([^*]+)\*\*", row[2])}


def allowed_terms() -> set[str]:
    """Every run of Chinese (with the Latin words inside it) of the glossary's second column: a variant
    inside one of them (批 in 批次, 账本 in 训练账本, 实验 in 中断实验台) is the term, not the variant."""
    found = set()
    for row in rows():
        found |= {t.strip() for t in re.findall(r"[\u4e00-\u9fffA-Za-z0-9 -]*[\u4e00-\u9fff][\u4e00-\u9fffA-Za-z0-9 -]*",
                                                 row[1].replace("**", ""))}
    return found


def variants() -> set[str]:
    """The third column's Chinese variants that a word search can check (see the exemptions above)."""
    out = set()
    for row in rows():
        for variant in re.split(r"、|；| / ", row[2].replace("**", "")):
            qualified = re.fullmatch(r"(.*?)（(.*)）", variant.strip())
            base, qualifier = (qualified.group(1).strip(), qualified.group(2)) if qualified else (variant.strip(), None)
            if (not CJK.search(base) or '"' in base or (qualifier and qualifier != "单独出现")
                    or len(base) == 1 or base in ORDINARY):  # Latin words: they are code in a Chinese string
                continue
            out.add(base)
    return out - allowed_terms() | set(EXTRA)


def unquoted(text: str) -> str:
    return re.sub(r"「[^」]*」|`[^`\n]*`", "", text)


def chinese_texts():
    for path in sorted((REPO / "notebooks" / "zh").glob("*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "markdown":
                yield f"{path.name}:{cell['id']}", "".join(cell["source"])
    for path in [REPO / "README.zh-CN.md", *sorted((REPO / "docs").glob("*.zh-CN.md")), REPO / "docs" / "exercises.md"]:
        if path != GLOSSARY:
            yield path.name, path.read_text(encoding="utf-8")
    for path in sorted((REPO / "course_lib").rglob("*.py")):
        yield str(path.relative_to(REPO)), path.read_text(encoding="utf-8")


def learner_texts():
    """What a learner reads in Chinese from the package (its strings and comments with Chinese in
    them, where they are) and from docs/exercises.md."""
    for path in sorted((REPO / "course_lib").rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        where = str(path.relative_to(REPO))
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and CJK.search(node.value):
                yield f"{where}:{node.lineno}", node.value
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT and CJK.search(token.string):
                yield f"{where}:{token.start[0]}", token.string
    yield "docs/exercises.md", (REPO / "docs" / "exercises.md").read_text(encoding="utf-8")


def found_in(text: str, variant: str, terms: set[str]) -> bool:
    """Whether ``variant`` occurs in ``text`` other than inside an allowed term that contains it."""
    for match in re.finditer(re.escape(variant), text):
        inside = False
        for term in (t for t in terms if variant in t and t != variant):
            start = term.find(variant)
            while start >= 0 and not inside:
                inside = text[match.start() - start:match.start() - start + len(term)] == term
                start = term.find(variant, start + 1)
            if inside:
                break
        if not inside:
            return True
    return False


def test_the_glossary_marks_what_is_never_written():
    assert {"进程数", "完全一致", "载入", "补齐"} <= never()


def test_no_banned_variant_anywhere():
    banned = never()
    found = []
    for where, text in chinese_texts():
        text = unquoted(text)
        found += [(where, v) for v in banned if v in text]
    assert not found, found


def test_the_check_of_every_variant_knows_its_words():
    checked = variants()
    assert {"随机数状态", "分道扬镳", "切块", "保存耗时", "原子改名", "笔记本", "账本", "参照训练"} <= checked
    assert not {"片段", "日志", "批", "权重", "类别"} & checked  # a term of another row, one character, ordinary, qualified
    terms = allowed_terms()
    assert not found_in("训练账本里有每一步", "账本", terms) and found_in("账本里有每一步", "账本", terms)
    assert not found_in("中断实验台", "实验", terms)


def test_what_a_learner_reads_uses_the_glossarys_terms():
    checked, terms = variants(), allowed_terms()
    found = []
    for where, text in learner_texts():
        text = unquoted(text)
        found += [(where, v) for v in sorted(checked) if found_in(text, v, terms)]
        if CJK.search(text) and where != "docs/exercises.md":
            found += [(where, "kill") for _ in KILL.finditer(text)]
    zh = (REPO / "docs" / "exercises.md").read_text(encoding="utf-8").split("## 中文", 1)[1]
    found += [("docs/exercises.md (中文)", "kill") for _ in KILL.finditer(unquoted(zh))]
    assert not found, found
