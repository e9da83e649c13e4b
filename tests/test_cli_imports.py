"""Starting the command line loads no statistics or model library.

Every ``judgelab`` command builds the whole parser first, so whatever a subcommand's option
declarations import, every command pays: when the parser imported the bias card and the
leaderboard's corrections, ``judgelab --help`` took 1.9 CPU-s instead of 0.9 (see
docs/benchmarks.md, "The default DAG").  The libraries load in the command that uses them.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO

HEAVY = ("scipy.stats", "scipy.optimize", "sklearn", "statsmodels", "torch", "matplotlib", "transformers")

PROBE = """
import sys
from judgelab import cli
cli.build_parser()
print("LOADED", ",".join(m for m in {heavy!r} if m in sys.modules))
"""


def test_building_the_parser_of_every_command_loads_no_heavy_library(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", PROBE.format(heavy=HEAVY)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[-1] == "LOADED ", done.stdout


@pytest.mark.parametrize("command", ["audit", "leaderboard", "power", "compare", "probe"])
def test_each_commands_help_still_lists_its_settings(command, capsys):
    """The settings the parser now takes from the light modules are the same declarations."""
    from judgelab import cli

    with pytest.raises(SystemExit) as stop:
        cli.main([command, "--help"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    assert "--alpha" in out
