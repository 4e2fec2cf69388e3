"""The package's shape, checked: one-way imports (import-linter's contracts in pyproject.toml),
the linter, the core's types (mypy), a small top level, and a map whose every name exists."""
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "course_lib"
BIN = Path(sys.executable).parent


def _run(*argv) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=120)


def test_imports_point_one_way_and_form_no_cycle():
    """Front doors > teaching > notebook views > beyond the chapter > the core; the core imports
    neither pandas nor the translations; no cycles among a package's modules."""
    out = _run(str(BIN / "lint-imports"), "--no-cache")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "0 broken" in out.stdout


def test_ruff_finds_nothing():
    out = _run(sys.executable, "-m", "ruff", "check", "--no-cache", "course_lib", "tests", "bench", "tools", "kit.py",
               "resume-audit")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]


def test_the_core_type_checks():
    """mypy on the core, as ``[tool.mypy]`` in pyproject.toml says (its files; torch and the other heavy
    packages skipped, so it takes seconds)."""
    out = _run(sys.executable, "-m", "mypy", "--config-file", str(REPO / "pyproject.toml"))
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "Success" in out.stdout


def test_the_kit_holds_no_audit_code():
    """The audit is a distribution of its own (``resume-audit/``, installed beside the kit): no
    package of the kit holds it, and the one the kit imports is this repository's folder."""
    import importlib.util

    import resume_audit

    assert importlib.util.find_spec("course_lib.audit") is None
    assert not list(PACKAGE.rglob("*audit_probe*")) and not list(PACKAGE.rglob("sitecustomize.py"))
    assert REPO / "resume-audit" in Path(resume_audit.__file__).resolve().parents


def test_the_top_level_is_small():
    """Modules and folders side by side at the top, besides ``__init__`` and ``__main__``."""
    modules = [p.name for p in PACKAGE.iterdir() if (p.suffix == ".py" or (p / "__init__.py").exists())
               and p.stem not in ("__init__", "__main__")]
    assert len(modules) <= 15, sorted(modules)


MAP_ENTRY = re.compile(r"((?:course_lib|resume_audit)(?:\.\w+)+):(\w+(?:\.\w+)?)")


def _resolve(module: str, name: str):
    obj = importlib.import_module(module)
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


MAP = REPO / "docs" / "README.md"


def test_every_name_on_the_map_exists():
    entries = MAP_ENTRY.findall(MAP.read_text(encoding="utf-8"))
    assert len(entries) >= 15, f"{MAP} lost its map"
    missing = []
    for module, name in entries:
        try:
            _resolve(module, name)
        except (ImportError, AttributeError) as err:
            missing.append(f"{module}:{name} ({err})")
    assert not missing, missing


def test_the_map_names_each_concept():
    """Each concept heads a row of the map (a remark in brackets allowed) that names where it lives."""
    text = MAP.read_text(encoding="utf-8")
    for concept in ("one rank", "DDP wraps the model", "one optimizer step", "save", "commit", "resume",
                    "the sampler's position", "a real kill"):
        assert re.search(rf"^\| {re.escape(concept)}(?: \([^|]*\))? \| `course_lib\.", text, re.M), concept


NOTEBOOKS = REPO / "notebooks"


def _called(path: Path) -> set[tuple[str, str]]:
    """``(module, name)`` of every course_lib function or class a notebook's code cells call."""
    import json

    aliases, out = {}, set()
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] != "code":
            continue
        src = "".join(cell["source"])
        for module, names in re.findall(r"from (course_lib[\w.]*) import ([\w, ]+)", src):
            for name in (n.strip() for n in names.split(",")):
                aliases[name] = f"{module}.{name}"
        for alias, attr in re.findall(r"\b(\w+)\.(\w+)\s*\(", src):
            if alias in aliases:
                out.add((aliases[alias], attr))
        for name in re.findall(r"(?<![.\w])(\w+)\s*\(", src):
            if name in aliases:
                out.add(tuple(aliases[name].rsplit(".", 1)))
    return out


@pytest.mark.parametrize("path", sorted(NOTEBOOKS.glob("0*.ipynb")), ids=lambda p: p.name[:2])
def test_every_function_a_notebook_calls_says_where(path):
    """d2l's "Defined in", the other way round: the docstring of each public function (or class)
    a notebook calls names that notebook, so a reader of the package finds the lesson."""
    import inspect

    number, missing = path.name[:2], []
    for module, name in sorted(_called(path)):
        try:
            obj = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            continue  # a submodule (``tables``) or a method: its own functions are checked where they are called
        if not (inspect.isfunction(obj) or inspect.isclass(obj)) or not obj.__module__.startswith("course_lib"):
            continue
        doc = (inspect.getdoc(obj) or "").lower()
        if f"notebook {number}" not in doc and "notebooks 01-05" not in doc and "every notebook" not in doc:
            missing.append(f"{module}.{name}")
    assert not missing, f"say 'notebook {number}' in the docstring of: {missing}"


CORE = ["config.py", "paths.py", "predict.py", "data", "ddp", "checkpoint", "watch", "_runtime"]
EXTENSION_WORDS = re.compile(r"\b(invariant|beyond|elastic|peer_lost|regroup|audit)\b|course_lib\.lab", re.IGNORECASE)


def _code_words(path: Path) -> list[tuple[int, str]]:
    """Names, strings and comments of ``path`` outside its docstrings, with their line."""
    import ast
    import io
    import tokenize

    source = path.read_text()
    docstrings = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                docstrings.add(first.lineno)
    kinds = (tokenize.NAME, tokenize.STRING, tokenize.COMMENT)
    return [(t.start[0], t.string) for t in tokenize.generate_tokens(io.StringIO(source).readline)
            if t.type in kinds and not (t.type == tokenize.STRING and t.start[0] in docstrings)]


def test_the_core_names_nothing_beyond_it():
    """The core asks its seams (a gradient sync's traits, votes, a fault hook) and names none of
    what plugs into them: not in its code, its messages or its comments (its docstrings may say
    where the extensions are)."""
    files = [p for name in CORE for p in ([PACKAGE / name] if name.endswith(".py") else (PACKAGE / name).rglob("*.py"))]
    found = [f"{p.relative_to(PACKAGE)}:{line}: {word}" for p in files for line, word in _code_words(p)
             if EXTENSION_WORDS.search(word)]
    assert found == [], found


def test_one_exit_code_map_and_an_outcome_that_is_no_exit_never_reaches_it():
    from course_lib.beyond.elastic.regroup import REGROUP
    from course_lib.beyond.invariant_trainer import PEER_LOST
    from course_lib.ddp.outcome import DONE, EXIT_PREEMPTED, PREEMPTED, exit_code

    assert [exit_code(o) for o in (DONE, PREEMPTED, PEER_LOST)] == [0, EXIT_PREEMPTED, 75]
    with pytest.raises(ValueError, match="ends no process"):
        exit_code(REGROUP)
