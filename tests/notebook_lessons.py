"""What each notebook teaches, checked on its executed outputs (issue 63: every figure and table of a
core path once passed CI while it showed the wrong thing, e.g. 0.0 % padding in notebook 02).

A recorder cell (:data:`RECORDER`), appended after a notebook's last cell, writes what its cells
computed into a JSON file: the values the lesson rests on (:data:`VALUES`, expressions evaluated in
the kernel), and every table a cell showed (``Out``: its cells and its ``attrs``), keyed by the
cell's id. :data:`LESSONS` holds, per notebook, the test of the lesson, which returns what the two
editions, run one after the other in one folder (Run All twice), must show alike.
"""
import html
import json
import re

RECORDER = '''import json as _json
def _lesson_value(_v):
    try:
        return _json.loads(_json.dumps(_v, default=str, skipkeys=True))
    except Exception as _err:
        return {{"error": repr(_err)}}
def _lesson_table(_v):
    import pandas as _pd
    if not isinstance(_v, _pd.DataFrame):
        return None
    return {{"attrs": _lesson_value(_v.attrs), "index": [str(_i) for _i in _v.index],
            "columns": [str(_c) for _c in _v.columns], "cells": _v.astype(str).values.tolist()}}
def _served(_logdir):
    """The TensorBoard server this kernel started on ``_logdir``: does its page answer? (then stop it)."""
    import os, signal, urllib.request
    from tensorboard import manager
    for _info in manager.get_all():
        if os.path.abspath(_info.logdir) == os.path.abspath(_logdir):
            with urllib.request.urlopen(f"http://localhost:{{_info.port}}/", timeout=10) as _page:
                _answer = {{"port": _info.port, "status": _page.status, "tensorboard": b"TensorBoard" in _page.read()}}
            os.kill(_info.pid, signal.SIGTERM)
            return _answer
    return None
_lesson = {{"tables": {{str(_n): _t for _n, _v in Out.items() if (_t := _lesson_table(_v)) is not None}}}}
for _key, _expr in {values!r}.items():
    try:
        _lesson[_key] = _lesson_value(eval(_expr))
    except Exception as _err:
        _lesson[_key] = {{"error": repr(_err)}}
with open({path!r}, "w", encoding="utf-8") as _f:
    _json.dump(_lesson, _f, ensure_ascii=False)'''

VALUES = {
    "01": {"unique_stored": 'imdb.provenance["unique_reviews"]', "set_unique": "len(unique)",
           "set_unique_before_cleaning": "len(set(texts))", "exact_unique": "exact.n_out",
           "near_pairs": "len(nd.pairs)", "num_perm": "64", "bands_rows": "[bands, rows]"},
    "02": {"mask": 'batch["attention_mask"].tolist()', "ids": 'batch["input_ids"].tolist()',
           "pad_id": "wordpiece.pad_token_id", "report": "report", "lengths": 'lengths["WordPiece"]',
           "max_length": "MAX_LENGTH",
           "longest_tokens": 'len(tokenization.encode_texts(wordpiece, [longest])["input_ids"][0])',
           "windows": 'len(win["input_ids"])'},
    "03": {"claim": "{k: v['parameters_agree'] for k, v in claim.items()}", "steps_per_epoch": "book.steps // BOOK_EPOCHS",
           "repeated_order": 'compare.repeated_epoch_order(f"{RUN_DIR}/no_set_epoch")',
           "correct_order": "compare.repeated_epoch_order(cfg.run_dir)"},
    "04": {"book_checkpoints": "book.checkpoints", "save_interval": "SAVE_INTERVAL", "book_epochs": "BOOK_EPOCHS",
           "tensorboard": "_served(RUN_DIR) if START_TENSORBOARD else None",
           "points": 'study["points"]', "verify_exit": "exit_code", "newest": "str(newest)",
           "fallback": "str(store.latest_valid(cfg.run_dir))"},
    "05": {"killed": "killed.interrupted", "kill_at": "BOOK_KILL_AT",
           "modes": '{m: r["first_divergent_step"] for m, r in study["runs"].items()}',
           "lab_result": "{k: lab.result[k] for k in ('identical', 'first_divergent_step')}",
           "lab_lines": "[(l.get_label(), list(map(float, l.get_xdata())), list(map(float, l.get_ydata()))) "
                        "for l in lab.figure.axes[0].lines]",
           "again": '{k: again[k] for k in ("kills", "steps_redone")}'},
}


def tables_of(lesson: dict, nb: dict, cell_id: str) -> list[dict]:
    """The tables cell ``cell_id`` showed (its ``Out`` entry), as the recorder wrote them."""
    count = next(c["execution_count"] for c in nb["cells"] if c.get("id") == cell_id)
    table = lesson["tables"].get(str(count))
    return [table] if table else []


def cut_tables(nb: dict) -> list[tuple[str, str]]:
    """``(cell id, cell text)`` of every table cell that pandas cut ("..."): the table view must show
    whole texts (notebook 04's crash message, 03's reconstruction choices, 05's fixes)."""
    found = []
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            page = "".join(out.get("data", {}).get("text/html", ""))
            if 'class="dataframe"' not in page:
                continue
            for text in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", page, re.S):
                if "..." in html.unescape(text) or "…" in html.unescape(text):
                    found.append((cell.get("id"), html.unescape(text)[:120]))
    return found


def _no_errors(lesson: dict) -> None:
    bad = {k: v for k, v in lesson.items() if isinstance(v, dict) and set(v) == {"error"}}
    assert not bad, f"the lesson's values could not be read: {bad}"


def lesson_01(lesson: dict, nb: dict) -> None:
    """§1's count and §3's agree where they count the same thing (the reviews as stored); §3's set()
    and exact_dedup agree (the cleaned texts); §4's MinHash uses b x r of its 64 values, as its prose says."""
    assert lesson["unique_stored"] == lesson["set_unique_before_cleaning"], lesson
    assert lesson["set_unique"] == lesson["exact_unique"] <= lesson["set_unique_before_cleaning"], lesson
    bands, rows = lesson["bands_rows"]
    assert bands * rows <= lesson["num_perm"]
    explain = tables_of(lesson, nb, "s6-explain")[0]
    labels = dict(zip(explain["index"], (row[0] for row in explain["cells"])))
    by_policy = [labels[p] for p in ("first", "priority", "vote")]
    assert len(set(by_policy)) > 1, f"the conflict example must get another label under some policy: {labels}"
    return {k: lesson[k] for k in ("unique_stored", "set_unique", "near_pairs")} | {"policies": by_policy}


def lesson_02(lesson: dict, nb: dict) -> None:
    """The mask has zeros exactly where the batch is padded, and some; padding shares are positive
    and ordered (pad to max >= dynamic >= grouped); reviews have many lengths, some past MAX_LENGTH
    (nothing truncated or padded behind the learner's back); the longest review needs several windows."""
    mask, ids, pad = lesson["mask"], lesson["ids"], lesson["pad_id"]
    real = [sum(row) for row in mask]
    assert min(real) < max(real) == len(mask[0]), f"the 8 reviews' real lengths {real}: the batch must pad"
    for row_mask, row_ids, n in zip(mask, ids, real):
        assert row_mask == [1] * n + [0] * (len(row_mask) - n), row_mask  # real tokens first, then padding
        assert all(i == pad for i in row_ids[n:]) and pad not in row_ids[:n]
    r = lesson["report"]
    assert r["pad_to_max"] >= r["dynamic"] >= r["grouped"] > 0, r
    assert r["pad_to_max"] > r["grouped"] * 2, r  # what grouping buys
    lengths = lesson["lengths"]
    assert len(set(lengths)) > len(lengths) // 10 and max(lengths) > lesson["max_length"], sorted(lengths)[-5:]
    assert lesson["longest_tokens"] > lesson["max_length"] and lesson["windows"] >= 2, lesson
    return {k: lesson[k] for k in ("report", "lengths", "mask", "windows")}


def lesson_03(lesson: dict, nb: dict) -> None:
    """§5: the synchronised run's ranks hold the same parameters, the unsynchronised one's do not;
    §3: `Step [k/16]`; deep-dive D: without set_epoch the epochs repeat the first one's order."""
    assert lesson["claim"] == {"synchronised (DDP)": True, "never synchronised": False}, lesson["claim"]
    assert lesson["steps_per_epoch"] == 16
    assert lesson["correct_order"] == 0 < lesson["repeated_order"], lesson
    return {k: lesson[k] for k in ("claim", "steps_per_epoch", "repeated_order")}


def lesson_04(lesson: dict, nb: dict, lang: str) -> None:
    """§4: the kit's run was really killed while saving step 64 and resumed from step 32, identical;
    the book's half-written file does not load. §2: TensorBoard served (from the venv's own binary,
    whatever PATH says) or, on a JupyterHub without a proxy, the curves drawn in place and why.
    Optional A: every run of the drill finished or stopped in its budget, and said so. B: the damaged
    checkpoint is found and skipped."""
    crash = tables_of(lesson, nb, "s4-crash")[0]["attrs"]
    assert [k["step"] for k in crash["kit_kills"]] == [64], crash["kit_kills"]
    assert crash["kit_resumed_from"] == 32 and crash["kit"]["identical"], crash
    assert crash["book_files"]["model_epoch_4.pth"] != "loads" and "Error: " in crash["book_resume"], crash
    interval, epochs = lesson["save_interval"], lesson["book_epochs"]
    assert list(lesson["book_checkpoints"]) == [f"model_epoch_{e}.pth" for e in range(interval, epochs + 1, interval)]
    board = "".join(json.dumps(o, ensure_ascii=False) for c in nb["cells"] if c.get("id") == "s2-tensorboard"
                    for o in c["outputs"])
    assert "Could not find" not in board and "ERROR" not in board, board[:500]
    if re.search(r"cannot reach|打不开", board):  # a JupyterHub without a proxy: the curves drawn in place, and why
        assert "application/vnd.jupyter.widget-view+json" in board, board[:500]
    else:
        served = lesson["tensorboard"]
        assert served and served["status"] == 200 and served["tensorboard"], served
    said = "".join("".join(o.get("text", "")) for c in nb["cells"] if c.get("id") == "deep-a-study" for o in c["outputs"])
    for point in lesson["points"]:
        for ok, wall in zip(point["finished"], point["walls"]):
            assert ok or re.search(rf"{point['every_steps']} (steps|步)", said), (point, said)
            assert wall > 0
    assert lesson["verify_exit"] == 1 and lesson["fallback"] != lesson["newest"], lesson
    return {"kills": [k["step"] for k in crash["kit_kills"]], "resumed_from": crash["kit_resumed_from"],
            "book_checkpoints": list(lesson["book_checkpoints"]), "drill": [p["finished"] for p in lesson["points"]]}


def lesson_05(lesson: dict, nb: dict) -> None:
    """§1: the book's run was killed at BOOK_KILL_AT. §2: the chapter's resume parts from its run
    never interrupted, the kit's does not. §3: only ``full`` is identical. §4: the lab's two curves
    part where its report says (or never, when it says identical). Deep-dive A: three kills."""
    assert lesson["killed"] and str(lesson["kill_at"] - 1) in lesson["killed"], lesson["killed"]
    loses = tables_of(lesson, nb, "s2-loses")[0]["attrs"]
    assert not loses["book"]["identical"] and loses["book"]["first_divergent_step"] is not None, loses["book"]
    assert loses["kit"]["identical"], loses["kit"]
    assert all((step is None) == (mode == "full") for mode, step in lesson["modes"].items()), lesson["modes"]
    curves = {label: dict(zip(xs, ys)) for label, xs, ys in lesson["lab_lines"] if len(xs) > 2}
    (_, ref), (_, run) = list(curves.items())[:2]
    parted = min((s for s in ref if s in run and run[s] != ref[s]), default=None)
    result = lesson["lab_result"]
    assert parted == result["first_divergent_step"] and result["identical"] == (parted is None), (parted, result)
    assert lesson["again"]["kills"] == 3, lesson["again"]
    return {k: lesson[k] for k in ("modes", "lab_result", "again")} | {"book": loses["book"]["first_divergent_step"]}


LESSONS = {"01": lesson_01, "02": lesson_02, "03": lesson_03, "04": lesson_04, "05": lesson_05}


def check_lesson(name: str, lesson: dict, nb: dict, lang: str) -> dict:
    """The lesson of notebook ``name`` holds in the executed ``nb``; returns what it showed, for
    :func:`same_lesson`."""
    _no_errors(lesson)
    number = name[:2]
    return lesson_04(lesson, nb, lang) if number == "04" else LESSONS[number](lesson, nb)


def same_lesson(name: str, first: dict, second: dict) -> None:
    """Run All a second time in a used folder (the other edition's code cells are the same) shows
    what the first did."""
    differ = {k: (first[k], second.get(k)) for k in first if first[k] != second.get(k)}
    assert not differ, f"{name}: the second Run All in the same folder showed another lesson: {differ}"
