"""No dead code: vulture finds nothing unused in judgelab/ and workflow_scripts/, beyond the
names listed with a reason in vulture_whitelist.py.

Uses count from the rules (every identifier of rules/*.smk and the Snakefile, which vulture
cannot parse), the tests, the benchmarks and scripts/; functions registered through a
registry decorator are entries, not dead.
"""

from __future__ import annotations

import keyword
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

DECORATORS = "@*.register,@register_set,@_authors_set"


def _vulture() -> list[str]:
    exe = Path(sys.executable).with_name("vulture")
    return [str(exe)] if exe.exists() else [shutil.which("vulture") or "vulture"]


def _rule_names(dest: Path) -> Path:
    """Every identifier the rules use, as a Python file vulture can read."""
    names: set[str] = set()
    for p in [*(REPO / "rules").glob("*.smk"), REPO / "Snakefile"]:
        names |= set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", p.read_text()))
    names = {n for n in names if not keyword.iskeyword(n) and not keyword.issoftkeyword(n)}
    dest.write_text("\n".join(sorted(names)) + "\n")
    return dest


def _run(tmp_path: Path, *extra: str) -> list[str]:
    pytest.importorskip("vulture")
    proc = subprocess.run(
        [*_vulture(), "judgelab", "workflow_scripts", "tests", "benchmarks", "scripts",
         str(_rule_names(tmp_path / "rule_names.py")), *extra, "--min-confidence", "60",
         "--ignore-decorators", DECORATORS],
        cwd=REPO, capture_output=True, text=True, timeout=300)
    # what the pipeline ships (and a probe file); tests and benchmarks only count as users
    skip = ("tests/", "benchmarks/", "scripts/", str(tmp_path / "rule_names.py"))
    return [ln for ln in proc.stdout.splitlines() if not ln.startswith(skip)]


@pytest.fixture(scope="module")
def with_whitelist(tmp_path_factory) -> tuple[list[str], Path]:
    """One vulture run with the whitelist and a probe file holding a dead helper: the shipped code's
    findings must be none, the probe's must be there (so the check bites on that very run)."""
    tmp = tmp_path_factory.mktemp("vulture")
    dead = tmp / "probe.py"
    dead.write_text("def never_called_helper():\n    return 1\n")
    return _run(tmp, "vulture_whitelist.py", str(dead)), dead


def test_vulture_finds_no_dead_code(with_whitelist):
    found, dead = with_whitelist
    assert [f for f in found if not f.startswith(str(dead))] == []


def test_the_whitelist_is_needed_and_the_check_bites(tmp_path, with_whitelist):
    """Without the whitelist, exactly its entries come back; a dead helper is found."""
    found = _run(tmp_path)
    listed = re.findall(r"^(?:_\.)?(\w+)  #", (REPO / "vulture_whitelist.py").read_text(), flags=re.M)
    assert listed and all(any(f"'{n}'" in f for f in found) for n in listed), (listed, found)
    probed, dead = with_whitelist
    assert any("never_called_helper" in f for f in probed if f.startswith(str(dead)))
