"""Notebook 05 as a learner meets it, in the Chinese edition (``notebooks/zh/``, whose code is
the English one's): a real JupyterLab server, a real (headless) Chromium, Run All (what it shows
read for English left and for its lesson with tests/test_notebooks.py's checks), then a real click
on the lab's Run button (labelled in Chinese), and TensorBoard on the run it produced. It is CI's run
of notebook 05; both editions one after the other in one folder: tests/test_notebooks.py under
``-m exhaustive``.

Fails if a widget does not render (e.g. ``jupyterlab_widgets`` missing: the lab then shows as
text), if a cell errors, or if no figure appears. Skipped where Chromium is not installed,
unless ``COURSE_LIB_REQUIRE_BROWSER=1`` (set by ``.ci/run``, which installs it). With
``COURSE_LIB_SCREENSHOTS=DIR`` the screenshots are also written to DIR (the README's images).
"""
import json
import os
import shutil
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest
from chinese_outputs import FIGURE_RECORDER
from notebook_lessons import RECORDER, VALUES, check_lesson
from test_notebooks import SMALL, ZH, assert_teaches

from course_lib._runtime.portability import free_port
from course_lib.lab.i18n import tr

pytestmark = [pytest.mark.browser, pytest.mark.slow]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]
NAME = "05_interruption_resume.ipynb"
PATH = f"zh/{NAME}"  # the kernel starts in work/zh/: the widgets speak Chinese there, as in notebooks/zh/


@pytest.fixture
def chromium(tmp_path):
    if CHROMIUM is None:
        if os.environ.get("COURSE_LIB_REQUIRE_BROWSER") == "1":
            pytest.fail("Chromium not found: install it (Debian: apt-get install chromium)")
        pytest.skip("Chromium not installed (Debian: apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=CHROMIUM, headless=True, args=FLAGS,
            viewport={"width": 1280, "height": 1000})
        yield context.new_page()
        context.close()


def _serve(args: list[str], url: str, log: Path, env: dict, timeout: float = 90):
    """Start a server process and wait until ``url`` answers."""
    import subprocess

    proc = subprocess.Popen(args, stdout=open(log, "w"), stderr=subprocess.STDOUT, env=env)
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{args[2]} exited: {log.read_text()[-2000:]}")
        try:
            urllib.request.urlopen(url, timeout=2)
            return proc
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise TimeoutError(f"{url} did not answer in {timeout} s: {log.read_text()[-2000:]}")


@pytest.fixture
def lab_server(tmp_path):
    """JupyterLab on loopback with a token, its settings and kernels isolated in tmp_path."""
    work = tmp_path / "work"
    work.mkdir()
    settings = {  # every cell in the DOM (JupyterLab 4 may leave off-screen cells unrendered); no news pop-up
        "notebook-extension/tracker": {"windowingMode": "none"},
        "apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False}}
    for name, values in settings.items():
        path = tmp_path / "settings" / "@jupyterlab" / f"{name}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    from papermill.iorw import load_notebook_node
    from papermill.parameterize import parameterize_notebook

    params = {**SMALL[NAME], "RUN_DIR": str(tmp_path / "runs")}
    nb = parameterize_notebook(load_notebook_node(str(ZH / NAME)), params)
    at = next(i for i, c in enumerate(nb.cells) if "injected-parameters" in c.metadata.get("tags", [])) + 1
    nb.cells.insert(at, nbformat.v4.new_code_cell(FIGURE_RECORDER.format(path=str(work / "figures.jsonl"))))
    nb.cells.append(nbformat.v4.new_code_cell(RECORDER.format(values=VALUES["05"], path=str(work / "lesson.json"))))
    (work / "zh").mkdir()
    nbformat.write(nb, work / PATH)
    port, token = free_port(), "course-lib-test"
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"), "MPLBACKEND": "module://matplotlib_inline.backend_inline"}
    proc = _serve([sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip", "127.0.0.1", "--port", str(port),
                   f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={work}",
                   f"--LabApp.user_settings_dir={tmp_path / 'settings'}",
                   f"--LabApp.workspaces_dir={tmp_path / 'workspaces'}", *(["--allow-root"] if os.geteuid() == 0 else [])],
                  f"http://127.0.0.1:{port}/api/status?token={token}", tmp_path / "jupyter.log", env)
    yield {"url": f"http://127.0.0.1:{port}", "token": token, "work": work, "log": tmp_path / "jupyter.log"}
    proc.terminate()
    proc.wait(30)


def _kernel_idle(server) -> bool:
    with urllib.request.urlopen(f"{server['url']}/api/kernels?token={server['token']}", timeout=5) as r:
        kernels = json.load(r)
    return bool(kernels) and all(k["execution_state"] == "idle" for k in kernels)


def _wait(predicate, timeout: float, what: str, page=None, shot: Path | None = None):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(1)
    if page is not None and shot is not None:
        page.screenshot(path=str(shot), full_page=True)
    raise TimeoutError(f"timed out after {timeout} s waiting for {what}")


def _save_shot(locator_or_page, name: str, tmp_path: Path) -> Path:
    path = tmp_path / name
    locator_or_page.screenshot(path=str(path))
    extra = os.environ.get("COURSE_LIB_SCREENSHOTS")
    if extra:
        Path(extra).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(extra) / name)
    return path


def test_chinese_notebook_05_and_the_lab_in_jupyterlab(chromium, lab_server, tmp_path):
    page, server = chromium, lab_server
    code_cells = sum(c.cell_type == "code" for c in nbformat.read(server["work"] / PATH, as_version=4).cells)
    page.goto(f"{server['url']}/lab/tree/{PATH}?token={server['token']}")
    page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=60_000)
    _wait(lambda: _kernel_idle(server), 120, "the kernel to start")

    # Run > Run All Cells, as a person would
    page.locator(".lm-MenuBar-itemLabel").get_by_text("Run", exact=True).click()
    page.locator(".lm-Menu-itemLabel").get_by_text("Run All Cells", exact=True).click()
    prompts = page.locator(".jp-CodeCell .jp-InputPrompt")
    errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']", has_text="Traceback")

    def finished() -> bool:  # every cell ran, or one failed (Run All stops there)
        texts = prompts.all_inner_texts()
        ran = len(texts) == code_cells and all(t.strip("[]: \n").isdigit() for t in texts)
        return (ran or errors.count() > 0) and _kernel_idle(server)

    _wait(finished, 600, "Run All to finish", page, tmp_path / "run_all_timeout.png")
    assert errors.count() == 0, errors.first.inner_text()[-3000:]
    assert page.locator(".jp-OutputArea-output img").count() >= 2, \
        "the figures did not appear (the lab's and the resume-mode study's)"

    # the lab is a rendered widget, not its text fallback
    assert page.get_by_text("断点续训").count() > 0, "the Chinese prose did not render"
    # what it shows (tests/test_notebooks.py's checks, Chinese left in English too): read as JupyterLab saves it
    saved = server["work"] / PATH
    before = saved.stat().st_mtime
    page.keyboard.press("Control+s")
    _wait(lambda: saved.stat().st_mtime > before, 30, "the notebook to be saved")
    shown = nbformat.read(saved, as_version=4)
    assert sum(len(c.get("outputs", [])) for c in shown.cells) > 30, "the saved notebook holds no outputs"
    assert_teaches(NAME, "zh", shown, server["work"] / "figures.jsonl", tmp_path / "runs")
    check_lesson(NAME, json.loads((server["work"] / "lesson.json").read_text(encoding="utf-8")), shown, "zh")
    # the chapter's acceptance test passes for the amnesiac resume too (compare is what tells them apart)
    acceptance = page.locator(".jp-OutputArea-output table", has_text=tr("loss after it", "zh"))  # drills.acceptance_table
    verdicts = [t.strip() for t in acceptance.locator("td").all_inner_texts()]
    assert verdicts.count(tr("passes", "zh")) >= 1 and tr("fails", "zh") not in verdicts, verdicts
    # the lab (deep-dive A): the first widget box with the lab's Run button (the advanced one follows it)
    lab = page.locator(".jp-OutputArea-output .widget-vbox").filter(
        has=page.locator("button.jupyter-button", has_text=tr("Run", "zh"))).filter(has_text=tr("kill at step", "zh")).first
    lab.wait_for(timeout=30_000)
    run = lab.locator("button.jupyter-button", has_text=tr("Run", "zh"))
    assert run.is_enabled()
    assert lab.locator("img").count() == 1, "the lab's figure from the Run-All click is missing"
    lab.locator("img").evaluate("img => img.dataset.old = '1'")

    # a real click with another resume mode: the curves must part and a new figure appear
    lab.locator("select").nth(1).select_option("weights-only")
    run.click()
    _wait(lambda: not run.is_enabled(), 30, "the lab to start")
    _wait(lambda: run.is_enabled() and lab.locator("img:not([data-old])").count() == 1, 300,
          "the lab's new figure", page, tmp_path / "lab_timeout.png")
    assert lab.locator(".widget-html").filter(has_text=tr("different", "zh")).count() == 1  # the status line
    lab.scroll_into_view_if_needed()
    assert _save_shot(lab, "lab.png", tmp_path).stat().st_size > 10_000

    _tensorboard_view(page, tmp_path / "runs" / "pipeline", tmp_path)


def _tensorboard_view(page, run_dir: Path, tmp_path: Path) -> None:
    """TensorBoard on the capstone pipeline's run (with its kill and resume)."""
    port = free_port()
    proc = _serve([sys.executable, "-m", "tensorboard.main", "--logdir_spec", f"pipeline:{run_dir / 'tb'}",
                   "--host", "127.0.0.1", "--port", str(port)],
                  f"http://127.0.0.1:{port}/", tmp_path / "tensorboard.log", dict(os.environ))
    try:
        page.goto(f"http://127.0.0.1:{port}/#timeseries")
        page.get_by_placeholder("Filter tags (regex)").last.fill("train/(loss|lr|grad_norm)|val/")
        page.keyboard.press("Escape")  # close the tag suggestions
        page.get_by_text("train/loss").first.wait_for(timeout=60_000)
        pane = page.locator("button", has_text="Settings")
        if pane.count() and page.get_by_text("Horizontal Axis").count():
            pane.last.click(timeout=5_000)  # the settings side pane opens by default: close it
        time.sleep(3)  # let the charts draw
        _save_shot(page, "tensorboard.png", tmp_path)
    finally:
        proc.terminate()
        proc.wait(30)
