"""Folders of logs as published: symlinked folders are followed (a link cycle is entered once and
the walk ends), and the files a format's folder holds beside its logs are skipped and named.

LLMBar publishes ``Dataset/LLMBar/Natural/dataset.json`` (the pairs and gold labels) beside
``evaluators/<judge>/<strategy>/{result,statistics}.json``: the folder reads as the judges' verdicts,
with ``dataset.json`` and each ``statistics.json`` listed as skipped on one line.  A file given by its
own name is always read (and refused when it is no log), and a custom mapping skips nothing.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path

import pandas as pd
import pytest

from judgelab.io import InputError
from judgelab.verdict_import import build_mapping, import_verdicts, preset_mapping

FIX = Path(__file__).parents[1] / "fixtures" / "verdict_logs"
JB = FIX / "judgebench"


def _without_paths(t: pd.DataFrame) -> pd.DataFrame:
    """The table without the column that names where a row was read (it differs by design)."""
    out = t.drop(columns=["source_file"])
    return out.sort_values(["judge", "pair_id", "order"]).reset_index(drop=True)


def _import_with_timeout(*args, seconds: float = 60, **kw) -> pd.DataFrame:
    """``import_verdicts`` in a thread: a walk that never ends fails the test instead of hanging it."""
    box: dict[str, object] = {}

    def run() -> None:
        try:
            box["table"] = import_verdicts(*args, **kw)
        except BaseException as exc:  # handed to the test
            box["error"] = exc

    th = threading.Thread(target=run, daemon=True)
    th.start()
    th.join(seconds)
    assert not th.is_alive(), "the folder walk did not end"
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["table"]  # type: ignore[return-value]


def test_symlinked_model_folders_are_read_and_a_link_cycle_is_entered_once(tmp_path):
    root = tmp_path / "outputs"
    (root / "a").mkdir(parents=True)
    (root / "linked").symlink_to(JB, target_is_directory=True)  # the logs live elsewhere
    (root / "a" / "back").symlink_to("..", target_is_directory=True)  # a cycle through the root
    (root / "a" / "self").symlink_to(".", target_is_directory=True)  # a folder that holds itself
    (root / ".hidden").symlink_to(JB, target_is_directory=True)  # hidden: skipped as before
    t = _import_with_timeout([root], preset_mapping("judgebench"), texts=False)
    want = import_verdicts([JB], preset_mapping("judgebench"), texts=False)
    pd.testing.assert_frame_equal(_without_paths(t), _without_paths(want))
    assert len(t) == len(want) == 2 * sum(len(f.read_text().splitlines()) for f in JB.glob("*.jsonl"))
    assert {Path(s).name for s in t["source_file"].astype(str)} == {f.name for f in JB.glob("*.jsonl")}
    assert all(s.startswith(str(root / "linked")) for s in t["source_file"].astype(str))
    assert sorted(t.attrs["skipped_files"]) == [
        f"{root / 'a' / 'back'}: a link back to a folder above it (its files are read once)",
        f"{root / 'a' / 'self'}: a link back to a folder above it (its files are read once)"]


def test_two_links_to_one_folder_are_two_folders(tmp_path):
    """Only a link back up is a cycle: two model folders linked to the same place are both read
    (here their pairs collide, which is the duplicate error, not a silent drop)."""
    root = tmp_path / "outputs"
    root.mkdir()
    for name in ("one", "two"):
        (root / name).symlink_to(JB, target_is_directory=True)
    with pytest.raises(InputError, match=r"has two verdicts for pair"):
        import_verdicts([root], preset_mapping("judgebench"), texts=False)


def _natural_layout(tmp_path: Path, data_root: Path) -> tuple[Path, Path]:
    """LLMBar's published ``Natural`` folder, put together from the shared data: ``dataset.json``
    beside ``evaluators/``, each judge's folder a symlink to the shared copy (which holds both
    ``result.json`` and ``statistics.json``, as the repository does)."""
    shared = data_root / "llmbar_judge_outputs" / "Natural" / "evaluators"
    dataset = data_root / "llmbar" / "Natural" / "dataset.json"
    if not shared.is_dir() or not dataset.is_file():
        pytest.skip("LLMBar Natural files not in the data root")
    nat = tmp_path / "Natural"
    (nat / "evaluators").mkdir(parents=True)
    (nat / "dataset.json").symlink_to(dataset)
    for judge in sorted(shared.iterdir()):
        (nat / "evaluators" / judge.name).symlink_to(judge, target_is_directory=True)
    return nat, shared


def test_the_llmbar_natural_folder_reads_its_judges_and_lists_what_it_skipped(tmp_path, data_root, caplog):
    nat, shared = _natural_layout(tmp_path, data_root)
    with caplog.at_level(logging.WARNING, logger="judgelab.verdict_import.importer"):
        t = import_verdicts([nat], preset_mapping("llmbar"), texts=False)
    results = sorted(shared.glob("*/*/result.json"))
    stats = sorted(shared.glob("*/*/statistics.json"))
    assert len(results) == len(stats) == 6
    # every judge's verdicts, both orders of every pair, counted from the files by the json module
    assert len(t) == 2 * sum(len(json.loads(f.read_text())) for f in results)
    assert set(t["judge"].astype(str)) == {f"{f.parent.parent.name}-{f.parent.name}" for f in results}
    direct = import_verdicts(results, preset_mapping("llmbar"), texts=False)
    pd.testing.assert_frame_equal(_without_paths(t), _without_paths(direct))
    # dataset.json and each statistics.json named with the reason, on one warning line
    skipped = t.attrs["skipped_files"]
    assert skipped[0] == f"{nat / 'dataset.json'}: LLMBar's pairs and gold labels, no judge verdicts"
    assert sorted(Path(s.split(": ")[0]).name for s in skipped[1:]) == ["statistics.json"] * 6
    assert all(s.endswith("LLMBar's own summary of a judge's result.json, no verdicts") for s in skipped[1:])
    lines = [r.getMessage() for r in caplog.records if "skipped" in r.getMessage()]
    assert len(lines) == 1 and "\n" not in lines[0]
    assert lines[0].startswith("skipped 7 file(s) that hold no verdicts of format 'llmbar': ")
    assert str(nat / "dataset.json") in lines[0]


def test_a_non_log_file_given_by_name_is_still_read_and_refused(data_root):
    dataset = data_root / "llmbar" / "Natural" / "dataset.json"
    if not dataset.is_file():
        pytest.skip("LLMBar Natural dataset not in the data root")
    with pytest.raises(InputError, match=r"dataset\.json row 0: format 'llmbar' expects key 'results'"):
        import_verdicts([dataset], preset_mapping("llmbar"))


def test_a_custom_mapping_skips_no_file_by_name(tmp_path):
    """The skip list belongs to a preset's published layout: a user's own ``dataset.json`` is a log."""
    d = tmp_path / "logs"
    d.mkdir()
    (d / "dataset.json").write_text(json.dumps([{"id": 1, "v": "A"}, {"id": 2, "v": "B"}]))
    t = import_verdicts([d], build_mapping({"pair_id": "id", "verdict": {"label": "v"}}))
    assert t["verdict"].tolist() == ["A", "B"] and t.attrs["skipped_files"] == []


def test_the_audit_command_reads_the_natural_folder(tmp_path, data_root, capsys, caplog):
    """Through the CLI: exit 0, the skipped files said once (a warning: on stderr outside pytest,
    which captures the log), never a traceback."""
    from judgelab import cli

    nat, _ = _natural_layout(tmp_path, data_root)
    with caplog.at_level(logging.WARNING):
        rc = cli.main(["audit", str(nat), "--format", "llmbar", "--out", str(tmp_path / "out"), "--resamples", "20",
                       "--views", "lenient"])
    err = capsys.readouterr().err
    assert rc == 0, err
    assert "Traceback" not in err and sum("skipped 7 file(s)" in r.getMessage() for r in caplog.records) == 1
    assert len(pd.read_parquet(tmp_path / "out" / "verdicts.parquet")) == 1200
    assert os.path.islink(nat / "dataset.json")  # the inputs untouched
