"""What a learner of the Chinese edition reads, checked for English: every output of an executed
Chinese notebook (printed lines, tables, figures) speaks Chinese, except code, identifiers and
quoted English sources (the reviews, the chapter's own printed lines, a paper's title).

:data:`FIGURE_RECORDER` is a cell a test runs right after the parameters: it records the words
of every figure the kernel draws (a figure's text is not in its PNG) into a JSON-lines file that
:func:`english_left` reads with the notebook.
"""
import html
import json
import re
from pathlib import Path

FIGURE_RECORDER = '''import json as _json, matplotlib as _mpl, matplotlib.backend_bases as _backend_bases
_print_figure = _backend_bases.FigureCanvasBase.print_figure
def _record_words(self, *args, **kwargs):
    words = [t.get_text() for t in self.figure.findobj(_mpl.text.Text) if t.get_text().strip()]
    with open({path!r}, "a", encoding="utf-8") as f:
        f.write(_json.dumps(words, ensure_ascii=False) + "\\n")
    return _print_figure(self, *args, **kwargs)
_backend_bases.FigureCanvasBase.print_figure = _record_words'''

# cells whose output is data or quoted English (their table headers are still checked), with why
QUOTED = {
    "01": {"s2-clean": "a review before and after cleaning", "s4-pairs": "near-duplicate reviews",
           "s5-sentences": "a review cut into sentences", "s6-table": "the handwritten corpus's sentences",
           "s6-book": "the chapter's example sentence"},
    "02": {"s2-book": "tokens of example text", "s2-small": "tokens of example text",
           "s3-chapter": "reviews, as the chapter batches them"},
    "03": {"deep-c-spawn": "Python's own error messages", "s2-run": "the chapter's printed lines"},
    "04": {"s1-run": "the chapter's printed lines"},
    "05": {"deep-d-predict": "reviews", "deep-d-why": "a review's word n-grams", "deep-d-box": "a review",
           "s1-run": "the chapter's printed lines", "s1-resumed": "the chapter's printed lines"},
}
CJK = re.compile(r"[\u4e00-\u9fff]")
CODE = re.compile(r"[_./=<>\[\]{}()#@\d]|^[A-Za-z]+[A-Z]\w*$|^[A-Z]{2,}")  # paths, calls, numbers, CamelCase, NAMES
WORD = re.compile(r"^[A-Za-z][a-z']*(?:-[a-z]+)*[,;:!?]?$")


def kit_names() -> set[str]:
    """Words a Chinese page keeps as they are: the kit's option values, the names of methods and people."""
    from course_lib.config import KILL_MODES, RESUME_MODES
    from course_lib.data.text_tools import POLICIES

    names = {"bag", "transformer", "minilm", "ddp", "invariant", "epoch", "Rank", "Jaccard", "Young", "Daly", "Other",
             "Technology", "Finance", "Health", "Sports", "sqrt", "fused", "foreach", "loss", "gloo", "dropout"}
    return names | set(KILL_MODES) | set(RESUME_MODES) | set(POLICIES)


def _citations() -> tuple[str, ...]:
    from course_lib.beyond.real_scale import LLAMA3, ORBAX

    return LLAMA3, ORBAX


# a program's own error, quoted as it raised it ("RuntimeError: PytorchStreamReader failed ..."): data, like a
# review, up to the bracket or line that holds it
EXCEPTION = re.compile(r"\b[A-Z]\w*(?:Error|Exception): [^）)\n]*")


def english_runs(text: str, names: set[str]) -> list[list[str]]:
    """The runs of English words in ``text`` once code, identifiers, the kit's names and quoted
    exception messages are taken out."""
    runs, run = [], []
    for token in EXCEPTION.sub(" ", text).split():
        bare = token.strip("\"'`*“”‘’")
        if WORD.match(bare) and not CODE.search(bare) and bare.rstrip(",;:!?") not in names:
            run.append(bare)
        else:
            runs, run = runs + [run] if run else runs, []
    return [r for r in runs + [run] if r]


def _quoted_source(text: str) -> bool:
    short = text.strip().rstrip(".").rstrip()
    return len(short) > 10 and any(c.startswith(short) for c in _citations())


def _pieces(output: dict, quoted: bool) -> list[tuple[str, str]]:
    """(where, text) of what an output shows a reader: ``header`` for a table's headers (its column
    headers only, where the rows are ``quoted`` data)."""
    if output.get("output_type") == "stream":
        return [("line", line) for line in "".join(output["text"]).splitlines()] if output["name"] == "stdout" else []
    data = output.get("data", {})
    if "text/html" in data:
        page = "".join(data["text/html"])
        page = re.sub(r"<style.*?</style>", "", page, flags=re.S)
        heads = [html.unescape(re.sub(r"<[^>]+>", "", h)) for t in re.findall(r"<thead.*?</thead>", page, re.S)
                 for h in re.findall(r"<th[^>]*>(.*?)</th>", t, re.S)]
        body = re.sub(r"<thead.*?</thead>", "", page, flags=re.S)
        if not quoted or "<thead" not in page:  # row headers too; a table of the kit's own HTML: its first row
            heads += [html.unescape(re.sub(r"<[^>]+>", "", h)) for h in re.findall(r"<th[^>]*>(.*?)</th>", body, re.S)]
            body = re.sub(r"<th[^>]*>.*?</th>", "", body, flags=re.S)
        cells = [html.unescape(re.sub(r"<[^>]+>", " ", c)) for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", body, re.S)]
        rest = html.unescape(re.sub(r"<[^>]+>", "\n", re.sub(r"<table.*?</table>", "", body, flags=re.S)))
        return [("header", h) for h in heads] + [("cell", c) for c in cells] + [("line", x) for x in rest.splitlines()]
    if "text/plain" in data and "image/png" not in data:
        return [("line", line) for line in "".join(data["text/plain"]).splitlines()]
    return []


def english_left(nb, notebook: str, figures: Path | None = None) -> list[tuple[str, str]]:
    """``(cell id, text)`` of every English sentence the executed Chinese ``nb`` shows (``notebook``:
    "01" ... "05"), and of every English word in its figures (``figures``: the recorder's file)."""
    names, quoted, found = kit_names(), QUOTED.get(notebook, {}), []
    for cell in nb["cells"]:
        cid = cell.get("id", "")
        if cell["cell_type"] != "code" or cid.endswith("-source"):  # printed source is code
            continue
        for output in cell.get("outputs", []):
            for where, text in _pieces(output, cid in quoted):
                if _quoted_source(text):
                    continue
                runs = english_runs(text, names)
                if where == "header" and not CJK.search(text) and any(len(w) > 2 for r in runs for w in r):
                    found.append((cid, text))
                elif cid not in quoted and any(len(r) >= (4 if CJK.search(text) else 3) for r in runs):
                    found.append((cid, text))  # a sentence, or an English clause inside a Chinese line
    for line in (figures.read_text(encoding="utf-8").splitlines() if figures and figures.exists() else []):
        for text in json.loads(line):
            if not CJK.search(text) and "$" not in text and any(len(w) > 2 for r in english_runs(text, names) for w in r):
                found.append(("figure", text))
    return found
