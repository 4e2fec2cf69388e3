"""Render the chapter map and the measured times into the notebooks and the READMEs.

    python tools/chapter_map.py            # rewrite the generated blocks
    python tools/chapter_map.py --check    # exit 1 if a block is out of date

Generated blocks sit between marker comments, so the prose around them stays hand-written:

* ``<!-- chapter-map:start -->`` ... ``<!-- chapter-map:end -->`` in each notebook's first cell
  (both editions): "the chapter says -> where you see it here", from ``tools/chapter.py``'s ``CLAIMS``;
* ``<!-- times:start -->`` ... ``<!-- times:end -->`` there too: read and run time of the core
  path, the exercises and each optional section, from ``bench/results/notebook_times.json``
  (``python -m bench notebook_times``);
* ``<!-- notebooks:start -->`` ... ``<!-- notebooks:end -->`` in README.md, README.zh-CN.md and
  the teacher's guides (docs/): notebook -> the chapter's sections -> measured core-path time;
* ``<!-- sections:start -->`` ... ``<!-- sections:end -->`` in the teacher's guides: every part
  of every notebook with its reading and run time.
"""
import argparse
import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import chapter  # noqa: E402  (beside this file)

TIMES = REPO / "bench" / "results" / "notebook_times.json"
# the run times were measured beside a busy loop (bench/notebook_times.py --busy): the headers say so
BUSY = bool(json.loads(TIMES.read_text()).get("busy")) if TIMES.exists() else False


def replace_block(text: str, name: str, body: str) -> str:
    pattern = re.compile(rf"(<!-- {name}:start -->\n).*?(<!-- {name}:end -->)", re.S)
    if not pattern.search(text):
        raise SystemExit(f"no <!-- {name}:start --> ... <!-- {name}:end --> block to fill")
    return pattern.sub(lambda m: m.group(1) + (body + "\n" if body else "") + m.group(2), text, count=1)


def kind_of(title: str) -> str:
    if title.startswith(("Optional deep-dive", "选读")):
        return "optional"
    if title == "(opening)" or title[:1].isdigit() or title in ("Summary", "小结"):
        return "core"
    return "exercises"


def letter(part: dict) -> str:
    m = re.search(r"(?:deep-dive|选读)\s+([A-Z])", part["title"])
    return m.group(1) if m else "?"


def minutes(seconds: float) -> str:
    """Whole minutes from 90 s on, tenths below (never "0")."""
    return f"{seconds / 60:.0f}" if seconds >= 90 else f"{max(seconds / 60, 0.1):.1f}"


def times_block(parts: list[dict] | None, lang: str) -> str:
    zh = lang == "zh"
    if not parts:
        return ("**用时**：尚未测量（`python -m bench notebook_times`）。" if zh
                else "**Time:** not measured yet (`python -m bench notebook_times`).")
    core = [p for p in parts if kind_of(p["title"]) == "core"]
    read, run = sum(p["read_seconds"] for p in core), sum(p["run_seconds"] for p in core)
    ex = [p for p in parts if kind_of(p["title"]) == "exercises"]
    optional = [p for p in parts if kind_of(p["title"]) == "optional"]
    if zh:
        lines = [f"**用时**（{'双核机器、一个核被别的程序占满' if BUSY else '双核机器'}、"
                 f"默认参数实测；阅读按每分钟 300 字、每行代码或输出 3 秒估计）：核心路径约 "
                 f"{minutes(read)} 分钟阅读 + {minutes(run)} 分钟运行"]
        if ex:  # their check cells ran on empty answers here: a real check's time is in docs/exercises.md
            lines.append(f"练习与自测约 {minutes(sum(p['read_seconds'] for p in ex))} 分钟阅读，另加写代码的时间")
        if optional:
            lines.append("选读（阅读 + 运行，分钟）" + "，".join(f"{letter(p)} {minutes(p['read_seconds'])} + "
                                                          f"{minutes(p['run_seconds'])}" for p in optional))
        return "；".join(lines) + "。"
    # a header is short (tests/test_chapter_map.py): the README says what "one loaded" is (another program on it)
    how = ("defaults, 2 cores, one loaded; reading 180 words a minute, 3 s a line of code or output" if BUSY else
           "2 cores, the defaults; reading at 180 words a minute, 3 s a line of code or of printed output")
    lines = [f"**Time** ({how}): core path about {minutes(read)} min to read + {minutes(run)} min to run"]
    if ex:  # their check cells ran on empty answers here: a real check's time is in docs/exercises.md
        lines.append(f"exercises and quiz about {minutes(sum(p['read_seconds'] for p in ex))} min to read, plus your code")
    if optional:
        lines.append("optional (read + run, min): " + ", ".join(f"{letter(p)} {minutes(p['read_seconds'])} + "
                                                                 f"{minutes(p['run_seconds'])}" for p in optional))
    return "; ".join(lines) + "."


def core_minutes(parts: list[dict] | None, lang: str) -> str:
    if not parts:
        return "–"
    core = [p for p in parts if kind_of(p["title"]) == "core"]
    read, run = sum(p["read_seconds"] for p in core), sum(p["run_seconds"] for p in core)
    return (f"约 {minutes(read)} + {minutes(run)} 分钟" if lang == "zh" else f"about {minutes(read)} + {minutes(run)} min")


def sections_table(times: dict, lang: str) -> str:
    """Every section of every notebook with its reading and run time (the teacher's guide)."""
    zh = lang == "zh"
    rows = [("| notebook | 部分 | 类型 | 阅读（分钟） | 运行（秒） |" if zh
             else "| notebook | part | kind | read (min) | run (s) |"),
            "|---|---|---|---|---|"]
    kinds = {"core": ("core", "核心"), "exercises": ("exercises", "练习"), "optional": ("optional", "选读")}
    for number, name in chapter.NOTEBOOKS.items():
        for part in times.get(lang, {}).get(name, {}).get("parts", []):
            if part["title"] == "(opening)":
                continue
            kind = kinds[kind_of(part["title"])][1 if zh else 0]
            rows.append(f"| {number} | {part['title']} | {kind} | {part['read_seconds'] / 60:.1f} | "
                        f"{part['run_seconds']:.0f} |")
    return "\n".join(rows) if len(rows) > 2 else ("（尚未测量）" if zh else "(not measured yet)")


def load_times() -> dict:
    return json.loads(TIMES.read_text())["notebooks"] if TIMES.exists() else {}


def render_notebook(path: Path, number: str, lang: str, times: dict) -> tuple[str, str]:
    nb = json.loads(path.read_text(encoding="utf-8"))
    headings = {c["id"]: "".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown"}
    first = nb["cells"][0]
    old = "".join(first["source"])
    new = replace_block(old, "chapter-map", chapter.opening_block(number, headings, lang))
    new = replace_block(new, "times", times_block(times.get(lang, {}).get(path.name, {}).get("parts"), lang))
    lines = new.split("\n")
    first["source"] = [line + "\n" for line in lines[:-1]] + [lines[-1]]
    return old, json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    times, stale = load_times(), []
    for number, name in chapter.NOTEBOOKS.items():
        for lang, path in (("en", REPO / "notebooks" / name), ("zh", REPO / "notebooks" / "zh" / name)):
            text = path.read_text(encoding="utf-8")
            _, new = render_notebook(path, number, lang, times)
            if new != text:
                stale.append(str(path.relative_to(REPO)))
                if not a.check:
                    path.write_text(new, encoding="utf-8")
    pages = (("en", REPO / "README.md", "notebooks/"), ("zh", REPO / "README.zh-CN.md", "notebooks/zh/"),
             ("en", REPO / "docs" / "teacher-guide.md", "../notebooks/"),
             ("zh", REPO / "docs" / "teacher-guide.zh-CN.md", "../notebooks/zh/"))
    for lang, page, prefix in pages:
        text = page.read_text(encoding="utf-8")
        per = {n: core_minutes(times.get(lang, {}).get(f, {}).get("parts"), lang) for n, f in chapter.NOTEBOOKS.items()}
        new = replace_block(text, "notebooks", chapter.readme_table(lang, per, prefix))
        if "<!-- sections:start -->" in new:
            new = replace_block(new, "sections", sections_table(times, lang))
        if new != text:
            stale.append(str(page.relative_to(REPO)))
            if not a.check:
                page.write_text(new, encoding="utf-8")
    print(("out of date: " if a.check else "rewritten: ") + (", ".join(stale) or "none"))
    return 1 if a.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
