"""The GitHub Actions job of docs/ci.md runs: its ``run:`` steps after the install step, as one
shell script, on the published LLMBar logs (ChatGPT trips the position gate, GPT-4 passes)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]


def workflow() -> dict:
    text = (REPO / "docs" / "ci.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"```yaml\n(.*?)```", text, flags=re.S)
    return yaml.safe_load(block)


def test_the_example_is_a_workflow_with_an_install_an_audit_and_an_artifact():
    wf = workflow()
    steps = wf["jobs"]["audit"]["steps"]
    names = [s.get("name", s.get("uses")) for s in steps]
    assert names[-3:] == ["Install judgelab", "Audit the judge", "Keep the card"]
    assert steps[-1]["if"] == "always()" and steps[-1]["with"]["path"] == "audit/"
    assert "--fail-on" in steps[-2]["run"]


def _run_steps(tmp_path: Path, judges: list[str], data_root: Path) -> subprocess.CompletedProcess:
    steps = workflow()["jobs"]["audit"]["steps"]
    after = [s for s in steps[[s.get("name") for s in steps].index("Install judgelab") + 1:] if "run" in s]
    script = "set -e\n" + "\n".join(s["run"] for s in after)
    for j in judges:  # LLMBar's layout, which the job's glob reads
        rel = Path("Natural") / "evaluators" / j / "Vanilla" / "result.json"
        (tmp_path / "logs" / rel).parent.mkdir(parents=True)
        (tmp_path / "logs" / rel).symlink_to(data_root / "llmbar_judge_outputs" / rel)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
           "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}
    return subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.slow
def test_the_job_fails_on_chatgpt_and_passes_on_gpt4(tmp_path: Path, data_root: Path):
    bad = _run_steps(tmp_path / "a", ["ChatGPT"], data_root)
    assert bad.returncode == 1, bad.stderr
    tripped = [ln for ln in bad.stderr.splitlines() if ln.startswith("judgelab: gate tripped:")]
    assert len(tripped) == 2 and all("position_preference" in ln for ln in tripped)
    assert (tmp_path / "a" / "audit" / "gate.json").exists()
    good = _run_steps(tmp_path / "b", ["GPT-4"], data_root)
    assert good.returncode == 0, good.stderr
    assert "gate tripped" not in good.stderr
