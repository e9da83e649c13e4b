"""The simulated backend finds study writer tasks through entry points, never by naming studies.

``judgelab.judges.simulated`` (backbone) loads the entry-point group ``judgelab.simulated_tasks``
the first time its registries are read; judgelab's own entries are the ``judgelab.simworld``
modules (``pyproject.toml``), and a user's package can add a writer task the same way.
"""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys

import pytest

from judgelab.config import JudgeSpec
from judgelab.judges import simulated as S
from judgelab.records import JudgeRequest, Message, OutputKind
from judgelab.registry import UnknownEntryError
from tests.conftest import REPO

OWN = {"rbd": "judgelab.simworld.rbd", "scoring": "judgelab.simworld.scoring",
       "strategies": "judgelab.simworld.strategies", "uda": "judgelab.simworld.uda"}


def _text_request(task: str, prompt: str = "Write about tidal energy and storage.") -> JudgeRequest:
    return JudgeRequest(messages=[Message("user", prompt)], kind=OutputKind.TEXT, fmt="text",
                        truth={"gen": {"task": task}})


def _judge() -> S.SimulatedJudge:
    return S.SimulatedJudge(JudgeSpec(name="sim-a", backend="simulated", model="sim", family="llama"))


def test_import_loads_nothing_and_first_use_loads_every_study_task():
    """Importing the backend imports no simworld module; the first registry read brings all of them."""
    code = (
        "import json, sys\n"
        "from judgelab.judges import simulated as S\n"
        "before = sorted(m for m in sys.modules if m.startswith(('judgelab.simworld', 'judgelab.rbd',"
        " 'judgelab.strategies', 'judgelab.uda', 'judgelab.scoring', 'judgelab.topk')))\n"
        "styles = S.PROMPT_STYLES.names()\n"
        "print(json.dumps({'before': before, 'styles': styles, 'tasks': S.GENERATORS.names()}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["before"] == []
    assert got["styles"] == ["cot", "cot_rubric", "full", "reference", "rubric"]  # strategies' prompt styles
    for task in ("answer", "expand", "reasoning",  # the backend's own
                 "rbd_choice", "rbd_revise", "rbd_teacher", "scoring_level", "strategies_reference",
                 "strategies_expand", "uda_answer"):
        assert task in got["tasks"], task


def test_the_install_declares_judgelab_own_entry_points():
    """``pip install -e .`` (scripts/install.sh) put the group in the installed metadata."""
    installed = {ep.name: ep.value for ep in importlib.metadata.entry_points(group=S.ENTRY_POINT_GROUP)}
    assert OWN.items() <= installed.items()


def test_checkout_entry_points_are_found_without_installed_metadata(monkeypatch):
    """Rule scripts in conda envs import judgelab from the checkout, uninstalled: pyproject.toml is read."""
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group=None: [])
    found = {ep.name: ep.value for ep in S.declared_simulated_tasks()}
    assert found == OWN


def test_a_users_package_registers_its_own_writer_task(monkeypatch, tmp_path):
    """The extension point: a module named by an entry point is imported on first use and writes."""
    (tmp_path / "h7_user_simtask.py").write_text(
        "from judgelab.judges.simulated import GENERATORS, SIMULATED_TEXT_NOTE\n\n"
        "@GENERATORS.register('user_echo')\n"
        "def _echo(req, judge, d):\n"
        "    return f'{judge.spec.family} echoes: {req.messages[-1].content} {SIMULATED_TEXT_NOTE}'\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    installed = importlib.metadata.entry_points
    user = importlib.metadata.EntryPoint("mine", "h7_user_simtask", S.ENTRY_POINT_GROUP)
    monkeypatch.setattr(importlib.metadata, "entry_points",
                        lambda group=None: [*installed(group=group), *([user] if group == S.ENTRY_POINT_GROUP else [])])
    monkeypatch.setattr(S, "_tasks_loaded", False)
    try:
        [ans] = _judge().answer([_text_request("user_echo")])
        assert ans.text == "llama echoes: Write about tidal energy and storage. [simulated text]"
    finally:
        S.GENERATORS._entries.pop("user_echo", None)
        sys.modules.pop("h7_user_simtask", None)


def test_a_broken_plugin_names_itself(monkeypatch):
    bad = importlib.metadata.EntryPoint("broken", "h7_no_such_module_xyz", S.ENTRY_POINT_GROUP)
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group=None: [bad])
    monkeypatch.setattr(S, "_tasks_loaded", False)
    with pytest.raises(ImportError, match=r"'broken' = 'h7_no_such_module_xyz'.*judgelab\.simulated_tasks"):
        S.load_simulated_tasks()
    assert S._tasks_loaded is False  # the next use fails again instead of running half-loaded


def test_an_unknown_task_names_itself_and_the_registered_ones():
    with pytest.raises(UnknownEntryError) as err:
        _judge().answer([_text_request("no_such_task")])
    msg = str(err.value)
    assert "'no_such_task'" in msg and "judge 'sim-a'" in msg and "judgelab.simulated_tasks" in msg
    for task in ("answer", "rbd_revise", "scoring_level", "strategies_reference", "uda_answer"):
        assert task in msg, task
