"""Paper 004's human-scored sets (judgelab/scoring/human.py): read when downloaded, empty and explained when not.

The real files (BiGGen-Bench-Results' human_eval parquet, Prometheus' flask_eval.json) are not on
this machine, so the present case runs on a file written here in the published human_eval layout
(``score_rubric`` a struct, one ``human_score`` and one ``gpt4_score`` per row) with *planted*
human scores -- not rows of the real set -- placed where the pinned download goes
(``<data root>/biggen/human_eval-00000-of-00001.parquet``):

* the pins: both sources name their upstream file at a 40-hex revision;
* present: the study keeps the set, the loader reads the planted human scores back, and Table 3's
  human rows (Spearman's rho, Pearson's r against the human gold) and Table 2's rows (a candidate's
  majority of three against human scores; the recorded GPT-4 scores) equal scipy's on the same
  vectors, unparsed scores (-1) left out;
* absent: the study leaves the set out with one line naming the file, the data root and the pinned
  URL, nothing is downloaded, the rule functions log exactly that line once per set, and Tables 2,
  3 and the wide Table 3 keep the set's cells, empty, with the line as ``reason``.
"""

from __future__ import annotations

import copy
import logging
import re

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from judgelab.config import ConfigError, default_config_paths, load_config
from judgelab.datasets import sources
from judgelab.scoring.gold_candidates import RECORDED_GPT4, TABLE2_COLUMNS, table2
from judgelab.scoring.human import absent_table2_rows, absent_table3_rows, log_absent, with_absent
from judgelab.scoring.items import items_frame, load_items
from judgelab.scoring.metrics import TABLE3_COLUMNS, correlation_tables, gold_frame, table3_wide
from judgelab.scoring.plan import ScoringStudy

N_ROWS = 40
PERTS = ["baseline", "descending", "random", "letter", "roman"]


def _config(optional_sets: bool = True) -> dict:
    cfg = copy.deepcopy(load_config(*default_config_paths()))
    cfg["scoring"]["datasets"] = {
        "rubric_set": {"loader": "rubric_set", "source": "data/scoring/rubric_set.jsonl"},
        "biggen": {"loader": "biggen", "source": "biggen/human_eval", "optional": optional_sets, "perturbations": PERTS},
        "flask_full": {"loader": "prometheus", "source": "prometheus_eval/flask", "optional": optional_sets,
                       "perturbations": PERTS},
    }
    cfg["scoring"]["run_datasets"] = None
    return cfg


def _study(cfg: dict) -> ScoringStudy:
    return ScoringStudy(cfg, {d["name"]: d for d in cfg["judges"]}, "h")


def _planted_biggen(rng: np.random.Generator) -> tuple[pd.DataFrame, np.ndarray]:
    """Rows in the published human_eval layout, human scores planted (10 instances x 4 models)."""
    human = rng.integers(1, 6, size=N_ROWS)
    rows = []
    for i in range(N_ROWS):
        rows.append({
            "id": f"planning_task_{i // 4}", "capability": "planning", "task": "task", "instance_idx": i // 4,
            "system_prompt": "You are a helpful assistant.", "input": f"Plan step {i // 4}.",
            "reference_answer": "A complete plan.",
            "score_rubric": {"criteria": "Is the plan complete?", **{f"score{k}_description": f"level {k}"
                                                                      for k in range(1, 6)}},
            "response": f"response {i}", "model_name": f"model-{i % 4}", "human_score": int(human[i]),
            "gpt4_score": int(np.clip(human[i] + rng.integers(-1, 2), 1, 5)),
        })
    return pd.DataFrame(rows), human


@pytest.fixture
def data_root_with_biggen(tmp_path, monkeypatch):
    monkeypatch.setenv(sources.ENV_VAR, str(tmp_path))
    frame, human = _planted_biggen(np.random.default_rng(0))
    path = tmp_path / sources.SOURCES["biggen/human_eval"].rel
    path.parent.mkdir(parents=True)
    frame.to_parquet(path)
    return tmp_path, frame, human


def test_the_downloads_are_pinned_to_a_revision():
    for name, upstream in (("biggen/human_eval", "prometheus-eval/BiGGen-Bench-Results/resolve/"),
                           ("prometheus_eval/flask", "prometheus-eval/prometheus-eval/")):
        url = sources.SOURCES[name].url
        assert upstream in url and re.search(r"/[0-9a-f]{40}/", url), url
    assert sources.SOURCES["biggen/human_eval"].url.endswith("/data/human_eval-00000-of-00001.parquet")
    assert sources.SOURCES["prometheus_eval/flask"].url.endswith("/eval/benchmark/data/flask_eval.json")


def _scores(items: pd.DataFrame, rng: np.random.Generator, judge: str, variants: list[str],
            repeats: int = 1) -> pd.DataFrame:
    """A judge's planted scores: the human score blurred, some unparsed (-1)."""
    rows = []
    for v in variants:
        for r in range(repeats):
            noisy = np.clip(np.rint(items["human_score"].to_numpy(float) + rng.normal(0, 1.0, len(items))), 1, 5)
            noisy[rng.random(len(items)) < 0.1] = -1
            rows.append(pd.DataFrame({"dataset": items["dataset"], "item_id": items["item_id"], "variant": v,
                                      "repeat": r, "judge": judge, "score": noisy, "simulated": False,
                                      "status": np.where(noisy == -1, "unparsed", "ok")}))
    return pd.concat(rows, ignore_index=True)


def test_a_present_set_gives_human_columns_equal_to_scipy(data_root_with_biggen):
    _, frame, human = data_root_with_biggen
    study = _study(_config())
    assert "biggen" in study.datasets and "biggen" not in study.absent
    assert study.absent.keys() == {"flask_full"}  # that one is still not here
    items = items_frame(load_items("biggen", study.cfg["datasets"]["biggen"]))
    assert items["human_score"].tolist() == human.astype(float).tolist()

    rng = np.random.default_rng(1)
    scores = _scores(items, rng, "judge-x", ["baseline", "letter"])
    table3, _ = correlation_tables(scores, gold_frame(items, None), n_boot=50, seed=0)
    hum = table3[table3["gold_source"] == "human"].set_index("variant")
    for v in ("baseline", "letter"):
        s = scores[scores["variant"] == v].set_index("item_id").loc[items["item_id"], "score"].to_numpy()
        ok = s >= 1
        assert hum.loc[v, "rho"] == pytest.approx(stats.spearmanr(human[ok], s[ok]).statistic, abs=1e-12)
        assert hum.loc[v, "r"] == pytest.approx(stats.pearsonr(human[ok], s[ok]).statistic, abs=1e-12)
        assert hum.loc[v, "n"] == N_ROWS and hum.loc[v, "n_unparsed"] == (~ok).sum() > 0
        assert hum.loc[v, "reason"] == ""

    gold = _scores(items, rng, "cand", ["gold"], repeats=3)
    t2 = table2(items, {"cand": gold}, against=["human"], n_boot=50)
    cand = t2[t2["candidate"] == "cand"].iloc[0]
    m = gold.pivot_table(index="item_id", columns="repeat", values="score").loc[items["item_id"]].to_numpy()
    majority = []
    for row in m:  # the gold protocol's majority, by hand: the most common valid score, ties to the median
        valid = row[row >= 1]
        counts = pd.Series(valid).value_counts()
        top = counts[counts == counts.max()].index.to_numpy(float) if len(valid) else np.array([])
        majority.append(np.nan if not len(valid) else (top[0] if len(top) == 1 else np.median(valid)))
    majority = np.array(majority)
    ok = np.isfinite(majority)
    assert cand["n"] == ok.sum()
    assert cand["rho"] == pytest.approx(stats.spearmanr(human[ok], majority[ok]).statistic, abs=1e-12)
    assert cand["r"] == pytest.approx(stats.pearsonr(human[ok], majority[ok]).statistic, abs=1e-12)
    rec = t2[t2["candidate"] == RECORDED_GPT4].iloc[0]
    assert rec["rho"] == pytest.approx(stats.spearmanr(human, frame["gpt4_score"]).statistic, abs=1e-12)


def test_an_absent_set_leaves_the_run_with_one_line_and_empty_cells(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv(sources.ENV_VAR, str(tmp_path))
    monkeypatch.setattr(sources, "download_file", lambda *a, **k: pytest.fail("an optional set was downloaded"))
    study = _study(_config())
    assert sorted(study.absent) == ["biggen", "flask_full"] and study.datasets == ["rubric_set"]
    assert study.absent_perturbations == {"biggen": PERTS, "flask_full": PERTS}
    line = study.absent["biggen"]
    assert "\n" not in line and line.startswith("scoring.datasets.biggen: human-scored set absent")
    assert "biggen/human_eval-00000-of-00001.parquet" in line and str(tmp_path) in line
    assert sources.SOURCES["biggen/human_eval"].url in line

    with caplog.at_level(logging.INFO, logger="judgelab.scoring.human"):
        log_absent(study.absent)
    assert [r.getMessage().split(";")[0] for r in caplog.records] == [study.absent["biggen"].split(";")[0],
                                                                      study.absent["flask_full"].split(";")[0]]
    assert not any(r.exc_info for r in caplog.records)

    judges = ["j1", "j2"]
    rows3 = absent_table3_rows(study.absent, judges, study.absent_perturbations)
    assert len(rows3) == 2 * 2 * len(judges) * len(PERTS)  # sets x golds (human, gold judge) x judges x prompts
    assert set(rows3["gold_source"]) == {"human", "gold_judge"}
    assert rows3[["rho", "r", "rho_ci_low", "r_ci_high"]].isna().all().all() and (rows3["n"] == 0).all()
    assert (rows3["reason"] == rows3["dataset"].map(study.absent)).all()

    # beside a scored set: the wide table keeps the absent set's columns, empty
    present = pd.DataFrame({"dataset": "rubric_set", "item_id": [f"i{k}" for k in range(6)], "design_score":
                            [1, 2, 3, 4, 5, 3], "gold_gpt4": np.nan, "human_score": np.nan})
    scores = pd.concat([pd.DataFrame({"dataset": "rubric_set", "item_id": present["item_id"], "variant": v,
                                      "repeat": 0, "judge": j, "score": [1, 2, 3, 5, 4, 3], "status": "ok"})
                        for j in judges for v in PERTS], ignore_index=True)
    t3, _ = correlation_tables(scores, gold_frame(present, None), n_boot=20)
    t3 = with_absent(t3, rows3)
    wide = table3_wide(t3)
    for col in ("biggen/human rho", "biggen/gold_judge r", "flask_full/human rho"):
        assert col in wide.columns and wide[col].isna().all(), col
    assert wide["rubric_set/design rho"].notna().all()

    rows2 = absent_table2_rows(study.absent, ["gold-j", "cand", "gold-j"])
    assert rows2.groupby("dataset")["candidate"].apply(list).to_dict() == {
        d: ["gold-j", "cand", RECORDED_GPT4] for d in ("biggen", "flask_full")}
    assert (rows2["reference_source"] == "human").all() and rows2["rho"].isna().all()


def test_an_absent_set_is_not_held_to_a_narrowed_perturbation_list(tmp_path, monkeypatch):
    """A config narrowing scoring.perturbations runs while the sets (whose own lists name more) are
    absent; their empty rows follow the narrowed list.  Present, the set's list is checked again."""
    monkeypatch.setenv(sources.ENV_VAR, str(tmp_path))
    cfg = _config()
    cfg["scoring"]["perturbations"] = ["baseline", "letter"]
    study = _study(cfg)
    assert study.absent_perturbations == {"biggen": ["baseline", "letter"], "flask_full": ["baseline", "letter"]}
    frame, _ = _planted_biggen(np.random.default_rng(2))
    (tmp_path / "biggen").mkdir()
    frame.to_parquet(tmp_path / sources.SOURCES["biggen/human_eval"].rel)
    with pytest.raises(ConfigError, match=r"scoring\.datasets\.biggen\.perturbations: 'descending'"):
        _study(cfg)


def test_a_set_not_marked_optional_is_not_skipped(tmp_path, monkeypatch):
    """Only optional sets leave the run; any other missing file stays an error at load time."""
    monkeypatch.setenv(sources.ENV_VAR, str(tmp_path))
    study = _study(_config(optional_sets=False))
    assert study.absent == {} and "biggen" in study.datasets


def test_absent_rows_are_every_cell_of_the_papers_tables_in_order_with_the_sets_line():
    """Table 3: per absent set (sorted), per gold source (human, then gold judge), per judge (sorted), per
    prompt (baseline first, the others in the metrics' order, an unknown prompt's family 'other'), one empty
    row with n 0 and the set's own line; a set without a prompt list gets the baseline alone. Table 2: per
    set, each gold candidate once (first-seen order) with the gold protocol, then the recorded GPT-4 scores,
    all against human scores and not simulated."""
    absent = {"zset": "line z", "aset": "line a"}
    rows3 = absent_table3_rows(absent, ["j2", "j1"], {"zset": ["zz", "random", "baseline"]})
    expected = [(d, g, j, v, fam) for d, vs in (("aset", [("baseline", "baseline")]),
                                               ("zset", [("baseline", "baseline"), ("random", "rubric_order"),
                                                         ("zz", "other")]))
                for g in ("human", "gold_judge") for j in ("j1", "j2") for v, fam in vs]
    assert list(rows3.columns) == TABLE3_COLUMNS
    assert list(rows3[["dataset", "gold_source", "judge", "variant", "perturbation"]].itertuples(
        index=False, name=None)) == expected
    assert (rows3["n"] == 0).all() and (rows3["n_unparsed"] == 0).all()
    assert list(rows3["reason"]) == [absent[d] for d, *_ in expected]
    assert rows3.drop(columns=[*TABLE3_COLUMNS[:7], "reason"]).isna().all().all()

    rows2 = absent_table2_rows(absent, ["g2", "g1", "g2"])
    assert list(rows2.columns) == TABLE2_COLUMNS
    assert list(rows2[["dataset", "candidate", "source"]].itertuples(index=False, name=None)) == [
        (d, c, s) for d in ("aset", "zset")
        for c, s in (("g2", "gold_protocol"), ("g1", "gold_protocol"), (RECORDED_GPT4, "recorded"))]
    assert (rows2["reference_source"] == "human").all() and rows2["simulated"].eq(False).all()
    assert (rows2["n"] == 0).all() and (rows2["n_unparsed"] == 0).all()
    assert list(rows2["reason"]) == ["line a"] * 3 + ["line z"] * 3
    assert rows2[["rho", "rho_ci_low", "rho_ci_high", "r", "r_ci_low", "r_ci_high"]].isna().all().all()


def test_absent_rows_follow_the_tables_own_rows_and_nothing_is_added_when_none_is_absent(caplog):
    """with_absent keeps the table's rows first and its columns; an empty table takes the absent rows in its
    columns; no absent set adds nothing. log_absent says each absent set's line once, sorted by set."""
    table = pd.DataFrame({"dataset": ["x"], "candidate": ["c"], "n": [5], "extra": [1.0]})
    rows2 = absent_table2_rows({"b": "line b"}, ["g"])
    joined = with_absent(table, rows2)
    assert list(joined.columns) == list(table.columns) and list(joined["dataset"]) == ["x", "b", "b"]
    assert list(joined["n"]) == [5, 0, 0] and list(joined.index) == [0, 1, 2]
    assert with_absent(table, rows2.iloc[:0]) is table
    empty = with_absent(pd.DataFrame(columns=["reason", "dataset"]), rows2)
    assert list(empty.columns) == ["reason", "dataset"] and list(empty["reason"]) == ["line b"] * 2
    assert list(with_absent(pd.DataFrame(), rows2).columns) == TABLE2_COLUMNS
    with caplog.at_level(logging.INFO, logger="judgelab.scoring.human"):
        log_absent({"b": "line b", "a": "line a"})
    assert [r.getMessage() for r in caplog.records] == [
        "line a; its Table 2 / Table 3 cells are left empty", "line b; its Table 2 / Table 3 cells are left empty"]
    assert all(r.levelno == logging.INFO for r in caplog.records)
