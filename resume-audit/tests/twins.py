"""The zoo's fixed twins. Every broken script of the zoo (tests/zoo/, all but ``correct_*`` and
``zoo_common``) carries the fix its finding gives, written into it as markers: a line of code
ending with ``# fix: <replacement>`` is, in the script's fixed twin, that replacement, at the
same indentation. A fix of several lines marks each; a line the fix adds is a placeholder in the
broken script (``pass  # fix: torch.set_rng_state(saved["rng"])``). The twin must resume
exactly where the broken script does not (tests/zoo/README.md: the truth by hand)."""
import re
import shutil
from pathlib import Path

ZOO = Path(__file__).parent / "zoo"
FIX = re.compile(r"^(?P<indent>[ \t]*)(?P<code>\S.*?)[ \t]+# fix: (?P<fix>\S.*?)[ \t]*$", re.M)
NOT_SCRIPTS = ("zoo_common", "hand_truth")


def broken_scripts() -> list[Path]:
    """The zoo's broken scripts: every one has a fixed twin."""
    return sorted(p for p in ZOO.glob("*.py") if p.stem not in NOT_SCRIPTS and not p.stem.startswith("correct_"))


def fixed_twin(script: Path, folder: Path) -> Path:
    """Write ``script``'s fixed twin into ``folder`` (same name, zoo_common.py beside it); its path."""
    script = Path(script)
    text, markers = FIX.subn(lambda m: m["indent"] + m["fix"], script.read_text())
    if not markers:
        raise ValueError(f"{script.name} has no '# fix:' marker: no fixed twin")
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(script.parent / "zoo_common.py", folder / "zoo_common.py")
    twin = folder / script.name
    twin.write_text(text)
    return twin
