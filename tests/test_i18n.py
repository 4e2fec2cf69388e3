"""Every English label the code shows through ``i18n.tr`` has its Chinese, said once."""
import ast
import collections
import re
from pathlib import Path

from course_lib.lab import i18n

PACKAGE = Path(i18n.__file__).resolve().parent.parent  # course_lib/, every subpackage


def tr_keys() -> dict[str, str]:
    """Literal first arguments of every ``tr(...)`` call in the package -> where it is."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "tr" \
                    and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                found.setdefault(node.args[0].value, f"{path.relative_to(PACKAGE)}:{node.lineno}")
    return found


def test_every_label_shown_has_its_chinese():
    missing = {key: where for key, where in tr_keys().items() if key not in i18n.LABELS}
    assert not missing, missing


def test_each_label_is_written_once():
    """One store: a key written twice (in one part of :mod:`course_lib.lab.zh` or in two) would let
    the later one win in silence."""
    counts = collections.Counter()
    for path in sorted((PACKAGE / "lab" / "zh").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "ZH":
                counts.update(k.value for k in node.value.keys)
    assert counts and not [k for k, n in counts.items() if n > 1]


def test_chinese_labels_are_chinese_and_keep_their_placeholders():
    import re

    for key, zh in i18n.LABELS.items():
        en = key.split("|")[-1]  # "context|text"
        assert any("\u4e00" <= ch <= "\u9fff" or "\u3000" <= ch <= "\u303f" or "\uff00" <= ch <= "\uffef" for ch in zh) \
            or zh.lower() == en.lower(), (en, zh)  # Chinese, or its punctuation (", " -> "、"), or a kept term (Rank)
        assert sorted(re.findall(r"{\w+", en)) == sorted(re.findall(r"{\w+", zh)), (en, zh)


def test_every_label_a_notebook_passes_to_a_table_has_its_chinese():
    """The notebooks' code cells are the same in both editions: a row label a cell writes
    (``tables.facts({"label": ...})``, ``index="..."``) reaches the Chinese edition through ``i18n``."""
    import json
    import re

    from course_lib.lab.tables import _label

    missing = []
    for path in sorted((PACKAGE.parent / "notebooks").glob("0*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] != "code":
                continue
            source = "".join(cell["source"])
            for node in ast.walk(ast.parse(source)):
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                    continue
                if node.func.attr == "facts" and node.args and isinstance(node.args[0], ast.Dict):
                    keys = [k.value for k in node.args[0].keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
                else:
                    keys = []
                keys += [kw.value.value for kw in node.keywords if kw.arg == "index" and isinstance(kw.value, ast.Constant)]
                missing += [(path.name, cell["id"], k) for k in keys
                            if re.search("[A-Za-z]{3}", k) and _label(k, "zh") == (k if " " in k else k.replace("_", " "))]
    assert not missing, missing


def test_the_trainers_lines_read_in_chinese_and_others_pass_as_written():
    from course_lib.lab.zh import LABELS, LINES

    line = "Held-out accuracy 80.25% on 800 reviews (ddp); parameters identical on all 2 ranks (ff82b8b1712c)"
    assert i18n.tr_line(line, "zh") == ("留出集准确率 80.25%（800 条影评，归约方式 ddp）；"
                                        "2 个 Rank 上的参数逐位相同（ff82b8b1712c）")
    assert i18n.tr_line(line, "en") == line
    chapter = "Rank 0, Epoch [1/3], Step [10/50], Loss: 0.6931"
    assert i18n.tr_line(chapter, "zh") == chapter
    for english in LINES:  # every log pattern has its Chinese, and shows every field the English carries
        assert set(re.findall(r"\{(\w+)\}", english)) == set(re.findall(r"\{(\w+)\}", LABELS[english])), english


def test_every_line_is_the_kits_own_words():
    """The words of each English line of LINES stand in the code that formats it (an f-string, or
    strings joined): a message reworded without its entry fails here, not silently in Chinese."""
    from course_lib.lab.zh import LINES

    root = Path(i18n.__file__).resolve().parents[1]
    written = []
    for path in [p for p in root.rglob("*.py") if "zh" not in p.relative_to(root).parts[:2] and p.name != "i18n.py"]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.JoinedStr):
                written.append("".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values))
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                written.append(node.value)
    code = "\n".join(written)
    missing = [en for en in LINES if any(len(words.split()) > 1 and words not in code for words in re.split(r"\{\w+\}", en))]
    assert not missing, f"no such line in the core (reworded?): {missing}"


def test_a_chinese_notebook_copied_anywhere_still_speaks_chinese(tmp_path, monkeypatch):
    """A teacher copies notebooks/zh/02_tokenization.ipynb into a course folder: the kernel's path
    no longer holds "zh", and the widgets once spoke English there. The notebook itself says which
    edition it is (``metadata.course_lib.lang``), and JupyterLab tells the kernel its path."""
    import shutil

    monkeypatch.delenv("COURSE_LIB_LANG", raising=False)
    copy = tmp_path / "week2" / "tokens.ipynb"
    copy.parent.mkdir()
    shutil.copy(PACKAGE.parent / "notebooks" / "zh" / "02_tokenization.ipynb", copy)
    monkeypatch.chdir(copy.parent)
    monkeypatch.setenv("JPY_SESSION_NAME", str(copy))
    assert i18n.resolve(None) == "zh" and i18n.tr("kill mode", None) == "中断方式"
    shutil.copy(PACKAGE.parent / "notebooks" / "02_tokenization.ipynb", copy)  # the English one, same name
    assert i18n.resolve(None) == "en"
    monkeypatch.setenv("COURSE_LIB_LANG", "zh")  # the override still wins
    assert i18n.resolve(None) == "zh"


def test_every_chinese_notebook_says_it_is_chinese():
    import json

    for path in sorted((PACKAGE.parent / "notebooks" / "zh").glob("*.ipynb")):
        assert json.loads(path.read_text(encoding="utf-8"))["metadata"]["course_lib"] == {"lang": "zh"}, path.name
