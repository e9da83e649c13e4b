"""The walkthroughs of ``docs/architecture.md`` run as the page shows them.

Each listing of the page is preceded by a marker ``<!-- walkthrough: NAME PATH -->``: this test
copies the fenced block below the marker to ``PATH`` in a scratch folder, runs the walkthrough's
script in a fresh Python process (the toy backend, preset or correction registered only the way
the page says) and checks what it made against numbers computed here from the toy inputs.  A
broken line in a listing fails its test.  The study walkthrough is a list of edits, not code:
its test checks that every shipped study sits in each place the page lists, and that every path
of the page's study anatomy exists.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import tomllib

from judgelab.workflow.planning import STUDIES
from tests.conftest import REPO
from tests.project.test_layering import STUDIES as PAPER_STUDIES

PAGE = REPO / "docs" / "architecture.md"
MARKER = re.compile(r"^<!-- walkthrough: (?P<name>[\w-]+) (?P<path>\S+) -->\n(?P<fence>`{3,})(?P<lang>\w*)\n"
                    r"(?P<body>.*?)\n(?P=fence)$", re.M | re.S)


def walkthrough(name: str, text: str | None = None) -> dict[str, str]:
    """{path: code} of the page's blocks marked for walkthrough ``name``, in page order."""
    text = PAGE.read_text(encoding="utf-8") if text is None else text
    return {m["path"]: m["body"] + "\n" for m in MARKER.finditer(text) if m["name"] == name}


def write_blocks(root: Path, blocks: dict[str, str]) -> None:
    """Each block at its path under ``root``, a package's ``__init__.py`` beside a module in a folder."""
    for rel, code in blocks.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(code, encoding="utf-8")
        if path.suffix == ".py" and path.parent != root:
            (path.parent / "__init__.py").touch()


def run_python(script: str, cwd: Path, *paths: Path, args: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """``python script`` in a fresh process whose imports see this checkout and ``paths`` only."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), *map(str, paths)]), "HF_HUB_OFFLINE": "1",
           "JUDGELAB_PROGRESS": "0", "MPLBACKEND": "Agg"}
    return subprocess.run([sys.executable, script, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


def test_the_marker_finds_blocks_and_only_marked_ones():
    text = ("<!-- walkthrough: x a/b.py -->\n```python\nprint(1)\n```\n\n```python\nprint(2)\n```\n"
            "<!-- walkthrough: y c.toml -->\n````toml\n[a]\nb = 1\n````\n")
    assert walkthrough("x", text) == {"a/b.py": "print(1)\n"}
    assert walkthrough("y", text) == {"c.toml": "[a]\nb = 1\n"}
    assert walkthrough("z", text) == {}


def test_the_page_marks_every_walkthrough_and_is_in_the_site():
    assert list(walkthrough("backend")) == ["my_judges/always_a.py", "pyproject.toml", "try_always_a.py",
                                           "my_judges.yaml"]
    assert list(walkthrough("preset")) == ["my_formats/toy_jsonl.py", "try_toy_jsonl.py"]
    assert list(walkthrough("correction")) == ["close_lengths.py", "close_lengths.diff"]
    assert "architecture.md" in (REPO / "mkdocs.yml").read_text(encoding="utf-8")


def _install(site: Path, pyproject: str) -> None:
    """What ``pip install -e .`` of the page's package leaves for the entry points: a dist-info
    whose ``entry_points.txt`` holds the groups of the page's ``pyproject.toml``."""
    project = tomllib.loads(pyproject)["project"]
    info = site / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n")
    groups = "".join(f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in entries.items())
                     for group, entries in project["entry-points"].items())
    (info / "entry_points.txt").write_text(groups)


@pytest.mark.slow
def test_the_toy_backend_judges_the_example_pairs_through_its_entry_point(tmp_path: Path):
    blocks = walkthrough("backend")
    site, work = tmp_path / "site", tmp_path / "work"
    write_blocks(site, {"my_judges/always_a.py": blocks["my_judges/always_a.py"]})
    work.mkdir()
    (work / "data").symlink_to(REPO / "data")  # the page runs it from a checkout's root
    (work / "try_always_a.py").write_text(blocks["try_always_a.py"])
    # not installed: the script imports nothing of the package, so the name is unknown
    bare = run_python("try_always_a.py", work, site)
    assert bare.returncode != 0 and "unknown judge backend 'always-a'" in bare.stderr, bare.stderr[-2000:]
    _install(site, blocks["pyproject.toml"])
    proc = run_python("try_always_a.py", work, site)
    assert proc.returncode == 0, proc.stderr[-3000:]
    table = pd.read_csv(work / "always_a_verdicts.csv")
    pairs = pd.read_json(REPO / "data" / "strategies" / "example_pairs.jsonl", lines=True)
    assert len(table) == 2 * len(pairs) and set(table["pair_id"]) == set(pairs["pair_id"])
    assert (table["judge"] == "always-a").all() and (table["backend"] == "always-a").all()
    assert (table["status"] == "ok").all() and (table["verdict_shown"] == "A").all()
    # shown first is always chosen: A in the original frame when shown AB, B when shown BA
    assert table.set_index("order")["verdict"].groupby(level=0).agg(set).to_dict() == {"AB": {"A"}, "BA": {"B"}}
    assert (work / "always_a_cache.sqlite").is_file()
    # the page's command line with the page's config entry: the same verdicts
    (work / "my_judges.yaml").write_text(blocks["my_judges.yaml"])
    command = re.search(r"`(judgelab judge --configfile my_judges\.yaml [^`]*)`", PAGE.read_text(encoding="utf-8"))
    assert command is not None
    cli = run_python("-m", work, site, args=("judgelab.cli", *shlex.split(command[1])[1:]))
    assert cli.returncode == 0, cli.stderr[-3000:]
    out = re.search(r"--out (\S+)", command[1])[1]
    again = pd.read_csv(work / out)
    assert again[["pair_id", "order", "verdict"]].equals(table[["pair_id", "order", "verdict"]])


@pytest.mark.slow
def test_the_toy_preset_imports_a_toy_log_and_audit_writes_its_card(tmp_path: Path):
    write_blocks(tmp_path, walkthrough("preset"))
    proc = run_python("try_toy_jsonl.py", tmp_path, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    log = pd.read_json(tmp_path / "toy_log.jsonl", lines=True, dtype={"pick": str, "gold": str})
    table = pd.read_parquet(tmp_path / "toy_verdicts.parquet")
    assert len(table) == len(log) == 120 and set(table["judge"]) == {"toy-judge"}
    # each game's verdict is the picked answer in the stored order, whatever the order shown
    got = table.set_index(["pair_id", "order"])["verdict"].sort_index()
    want = log.set_index(["qid", "order"])["pick"].map({"1": "A", "2": "B"}).sort_index()
    assert got.tolist() == want.tolist() and got.index.tolist() == want.index.tolist()
    gold = table.drop_duplicates("pair_id").set_index("pair_id")["expected_verdict"].sort_index()
    assert gold.tolist() == log.drop_duplicates("qid").set_index("qid")["gold"].map(
        {"1": "A", "2": "B"}).sort_index().tolist()
    card = pd.read_csv(tmp_path / "toy_card" / "bias_card.csv")
    pos = card[(card["judge"] == "toy-judge") & (card["metric"] == "position_preference")]
    assert set(pos["status"]) == {"detected"}, pos
    # the card's estimate is P(picks the answer shown first) - P(picks the one shown second), counted
    # here (the toy log has no tie)
    first = (log["pick"] == np.where(log["order"] == "AB", "1", "2")).mean()
    assert first > 0.8 and pos["estimate"].to_numpy() == pytest.approx(first - (1 - first))
    assert (tmp_path / "toy_card" / "report.html").is_file()


@pytest.mark.slow
def test_the_trial_correction_is_the_win_rate_of_games_of_similar_length(tmp_path: Path, data_root: Path):
    write_blocks(tmp_path, {"close_lengths.py": walkthrough("correction")["close_lengths.py"]})
    files = _alpaca_files(data_root)
    proc = run_python("close_lengths.py", tmp_path, args=tuple(map(str, files)))
    assert proc.returncode == 0, proc.stderr[-3000:]
    printed = {m: (int(n), float(r)) for m, r, n in
               re.findall(r"^(\S+): ([\d.]+) \(.*\), (\d+) games$", proc.stdout, re.M)}
    want = _similar_length_win_rates(files)
    assert sorted(printed) == sorted(want) == ["claude-2.1", "vicuna-7b"], proc.stdout
    for model, (n, rate) in want.items():
        assert printed[model][0] == n and printed[model][1] == pytest.approx(rate, abs=0.051)


def _similar_length_win_rates(files: list[Path]) -> dict[str, tuple[int, float]]:
    """{model: (games, win rate in percent)} over the games whose answers differ in length by at most
    a fifth, computed from AlpacaEval's annotations directly: preference = P(output_2 better) + 1,
    null (a failed annotation) and 0 (identical outputs) left out as the import leaves them out."""
    out = {}
    for path in files:
        ann = pd.DataFrame(json.loads(path.read_text()))
        ann = ann[ann["preference"].notna() & (ann["preference"] > 0)]
        la, lb = ann["output_1"].str.len(), ann["output_2"].str.len()
        y = ann.loc[(la - lb).abs() <= 0.2 * np.maximum(la, lb), "preference"] - 1
        out[ann["generator_2"].iloc[0]] = (len(y), 100 * y.mean())
    return out


def _alpaca_files(data_root: Path) -> list[Path]:
    return [data_root / "alpaca_eval" / "results" / m / "weighted_alpaca_eval_gpt4_turbo" / "annotations.json"
            for m in ("claude-2.1", "vicuna-7b")]


@pytest.mark.slow
def test_the_wired_in_correction_is_in_the_leaderboard_and_its_report(tmp_path: Path, data_root: Path):
    """The page's diff applies to this checkout's ``judgelab/board/settings.py`` and ``table.py`` and, applied to a copy
    of the package, gives ``judgelab leaderboard --corrections close_lengths`` the trial's numbers."""
    copy = tmp_path / "checkout"
    shutil.copytree(REPO / "judgelab", copy / "judgelab", ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "config").symlink_to(REPO / "config")
    (tmp_path / "close_lengths.diff").write_text(walkthrough("correction")["close_lengths.diff"])
    applied = subprocess.run(["git", "apply", "--verbose", str(tmp_path / "close_lengths.diff")], cwd=copy,
                             capture_output=True, text=True)
    assert applied.returncode == 0, ("the diff of docs/architecture.md no longer applies to "
                                     f"judgelab/board/settings.py and table.py; rewrite it:\n{applied.stderr}")
    files = _alpaca_files(data_root)
    env = {**os.environ, "PYTHONPATH": str(copy), "HF_HUB_OFFLINE": "1", "JUDGELAB_PROGRESS": "0", "MPLBACKEND": "Agg"}
    proc = subprocess.run([sys.executable, "-m", "judgelab.cli", "leaderboard", "--format", "alpaca_eval",
                           *map(str, files), "--corrections", "close_lengths", "--out", str(tmp_path / "board")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    board = pd.read_csv(tmp_path / "board" / "leaderboard.csv").set_index("model")
    for model, (n, rate) in _similar_length_win_rates(files).items():
        assert 0 < n < board.loc[model, "n"]
        assert board.loc[model, "close_lengths"] == pytest.approx(rate)
        assert board.loc[model, "close_lengths_ci_low"] < rate < board.loc[model, "close_lengths_ci_high"]
    assert board["lc_win_rate"].isna().all()  # the corrections not named stay empty
    assert "games of similar length" in (tmp_path / "board" / "report.html").read_text(encoding="utf-8")


def _section(title: str) -> str:
    text = PAGE.read_text(encoding="utf-8")
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else None]


def _paths(section: str) -> list[str]:
    """The file and folder names (backticked, with a ``/`` or a suffix) of a section of the page."""
    return [p for p in re.findall(r"`([^`\s]+)`", _section(section))
            if re.fullmatch(r"[\w./*-]+", p) and ("/" in p or re.search(r"\.(py|smk|yaml|yml|md|toml)$", p)
                                                   or p == "Snakefile")]


def test_every_path_of_the_study_anatomy_exists_for_every_paper_study():
    """The anatomy names the topk study's files; every paper study has the same ones."""
    paths = _paths("A study's anatomy")
    assert len(paths) >= 15 and "Snakefile" in paths, paths
    for s in PAPER_STUDIES:
        for p in paths:
            assert glob.glob(str(REPO / p.replace("topk", s))), f"docs/architecture.md names {p}; no such {s} file"


def test_every_shipped_study_is_in_each_place_the_study_walkthrough_lists():
    """The list of edits a new study needs is the list of places every study occupies."""
    snakefile = (REPO / "Snakefile").read_text(encoding="utf-8")
    plans = (REPO / "rules" / "plans.smk").read_text(encoding="utf-8")
    errors = (REPO / "rules" / "config_errors.smk").read_text(encoding="utf-8")
    config = (REPO / "config" / "config.yaml").read_text(encoding="utf-8")
    schema = (REPO / "config" / "schema.yaml").read_text(encoding="utf-8")
    # the Snakefile, plans.smk and config_errors.smk loop over STUDIES: a study's own lines are its
    # planner and its rules file setting its targets
    assert "for _study in STUDIES:\n    if PLANS[_study].ok:\n\n        include: f\"rules/{_study}.smk\"" in snakefile
    assert "list(STUDY_OUTPUTS.values())" in snakefile.split("rule all:")[1]
    assert "for study in STUDIES" in plans and "for _study, _plan in PLANS.items():" in errors
    for s in STUDIES:
        assert f'    "{s}": (' in plans, s
        assert re.search(rf"^{s}:", config, re.M) and re.search(rf"^  {s}:", schema, re.M), s
        study_rules = "".join(p.read_text(encoding="utf-8") for p in (REPO / "rules").glob(f"{s}*.smk"))
        assert f'STUDY_OUTPUTS["{s}"] = ' in study_rules, s
    walk = _section("Walkthrough: a study")
    for name in ('"mystudy": (plan_mystudy, config', "mystudy_config_error", "rules/mystudy.smk",
                 'STUDY_OUTPUTS["mystudy"]', "`STUDIES`", "`RULES`", "results/mystudy/{path}"):
        assert name in walk, name
    paths = _paths("Walkthrough: a study")
    for rel in ("judgelab/mystudy/plan.py", "judgelab/mystudy/calls.py", "rules/mystudy.smk", "rules/plans.smk",
                "judgelab/workflow/planning.py", "tests/project/test_layering.py",
                "config/config.yaml", "config/schema.yaml", "judgelab/plots/mystudy.py", "docs/studies/mystudy.md",
                "mkdocs.yml"):
        assert rel in paths, rel
    for s in PAPER_STUDIES:  # every place the list names exists for each paper study
        for p in paths:
            assert glob.glob(str(REPO / p.replace("mystudy", s))), f"docs/architecture.md names {p}; no such {s} file"
        assert f"studies/{s}.md" in (REPO / "mkdocs.yml").read_text(encoding="utf-8"), s
    assert set(PAPER_STUDIES) <= set(STUDIES)
