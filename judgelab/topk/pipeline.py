"""What each rule of ``rules/topk.smk`` does, as library functions (the rule scripts are thin).

``cfg`` is the validated ``topk`` config section (``config/schema.yaml`` documents every key).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import pandas as pd

from judgelab.cache import CallStore
from judgelab.config import ConfigError, JudgeSpec
from judgelab.datasets.pairs import load_pairset, pair_from_row, pairs_frame
from judgelab.io import any_true, table_rows
from judgelab.judges import make_judge
from judgelab.ranking.bias_aware import FitOptions
from judgelab.registry import is_simulated
from judgelab.simworld.topk import Scenario, SyntheticJudge
from judgelab.topk import llmbar as llmbar_mod
from judgelab.topk import tables as T
from judgelab.topk.experiment import (
    TopkSettings,
    evaluate_budget,
    evaluate_full,
    parse_strategies,
    single_threaded_blas,
)
from judgelab.topk.flips import collect_flips, flip_pairs, flip_requests, flip_summary, planted_flip_rate
from judgelab.topk.items import PoolDesign, build_items, load_banks
from judgelab.topk.live import LiveSettings, rank_live, result_tables
from judgelab.topk.oracle import judge_pools, opened_cache, planted_bias, pool_oracles, study_judge_entry
from judgelab.topk.probes import planted_probabilities, probe_pairs, probe_summary
from judgelab.topk.synthetic import run_synthetic, synthetic_summary
from judgelab.topk.userpool import load_user_pool

log = logging.getLogger(__name__)


def settings_from_config(cfg: dict[str, Any], seed: int = 0) -> TopkSettings:
    m = cfg.get("model", {})
    return TopkSettings(
        k=int(cfg.get("items", {}).get("k", 5)), lam=float(m.get("lam", 1.0)), lam_b=float(m.get("lam_b", 0.1)),
        lam_b_sweep=tuple(float(x) for x in m.get("lam_b_sweep", (0.1, 1.0, 2.0))),
        refit_every=int(m.get("refit_every", 8)), n_samples=int(m.get("n_samples", 1500)),
        k_values=tuple(int(x) for x in cfg.get("k_values", (1, 3, 5, 10))),
        n_anchors=int(cfg.get("n_anchors", 60)), anchor_seed=int(seed),
    )


def pool_design(cfg: dict[str, Any]) -> PoolDesign:
    it = dict(cfg.get("items", {}))
    if "other_true_counts" in it:
        it["other_true_counts"] = tuple(int(x) for x in it["other_true_counts"])
    return PoolDesign(**it)


# -- rule topk_items -----------------------------------------------------------------


def make_items(cfg: dict[str, Any], seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The item pools and the bias-probe pairs."""
    banks = load_banks(cfg["banks"])
    design = pool_design(cfg)
    items = build_items(banks, design, int(cfg["n_oracles"]), int(seed))
    probes = probe_pairs(banks, int(cfg.get("probes", {}).get("n_per_topic", 6)), design.n_statements, int(seed))
    return items, pairs_frame(probes)


# -- rule topk_query: judgelab.topk.oracle.query_judge --------------------------------


# -- rule topk_evaluate --------------------------------------------------------------


def evaluate_judge(oracle: pd.DataFrame, items: pd.DataFrame, entry: dict[str, Any], cfg: dict[str, Any],
                   seed: int, *, focus: bool) -> dict[str, pd.DataFrame]:
    """Full-data fits and budget runs of one judge over all its pools (tables of
    :mod:`judgelab.topk.experiment`, with ``judge``, ``family``, ``simulated`` columns;
    params also carry ``planted`` for simulated judges)."""
    covs = list(cfg["covariates"])
    family = str(entry.get("family", "unknown"))
    settings = settings_from_config(cfg, seed)
    strategies = parse_strategies(list(cfg["strategies"]) + (list(cfg.get("focus_strategies", [])) if focus else []))
    e = study_judge_entry(entry, cfg.get("sampling") or {}, bool(cfg.get("logit_verdicts", True)))
    judge = make_judge(JudgeSpec.from_dict(e, where=f"judge {entry['name']}")) if is_simulated(entry) else None
    planted = planted_bias(judge, items, covs) if judge is not None else {}
    full, params, scores, budget, alloc, queries = [], [], [], [], [], []
    with single_threaded_blas():
        for pool in pool_oracles(oracle, items, covs, family):
            r = evaluate_full(pool, settings)
            full.append(r.recall)
            params.append(r.params)
            scores.append(r.scores)
            b = evaluate_budget(pool, strategies, cfg["seeds"], cfg["budgets"], settings, base_seed=seed,
                                allocation_budget=int(cfg["allocation_budget"]) if focus else None)
            budget.append(b.recall)
            alloc.append(b.allocation)
            queries.append(b.queries)
    meta = {"judge": entry["name"], "family": family, "simulated": is_simulated(entry)}
    out = {name: pd.concat(fr, ignore_index=True).assign(**meta) if fr else pd.DataFrame()
           for name, fr in (("recall", full), ("params", params), ("scores", scores), ("budget", budget),
                            ("allocation", alloc), ("queries", queries))}
    out["params"]["planted"] = out["params"]["param"].map(planted).astype(float) if len(out["params"]) else []
    n_missing = int(oracle["y"].isna().sum())
    if n_missing:
        log.info("%s: %d of %d oracle verdicts unusable (unparsed/refused/error); they spend budget and "
                 "reveal nothing", entry["name"], n_missing, len(oracle))
    return out


# -- rule topk_synthetic -------------------------------------------------------------


def synthetic_tables(cfg: dict[str, Any], seed: int) -> dict[str, pd.DataFrame]:
    syn = cfg["synthetic"]
    scenarios = [Scenario(name, SyntheticJudge(c=tuple(float(x) for x in s["c"]), kappa=float(s["kappa"]),
                                               theta_sd=float(s.get("theta_sd", 1.25)),
                                               max_corr=float(cfg["items"]["max_corr"]),
                                               legitimate=bool(s.get("legitimate", False))))
                 for name, s in syn["scenarios"].items()]
    settings = settings_from_config(cfg, seed)
    with single_threaded_blas():
        full, params, budget = run_synthetic(
            scenarios, n_oracles=int(syn["n_oracles"]), n_items=int(cfg["items"]["n_items"]), seeds=syn["seeds"],
            budgets=cfg["budgets"], strategies=parse_strategies(syn["strategies"]), settings=settings, seed=seed)
    at = int(cfg["ablation_budget"])
    summary = synthetic_summary(full, params, budget, k=settings.k, lam_b=settings.lam_b,
                                at_budget=at if at in set(cfg["budgets"]) else max(cfg["budgets"]), seed=seed)
    return {"recall": full, "params": params, "budget": budget, "summary": summary}


# -- rules topk_llmbar_* -------------------------------------------------------------


def llmbar_pairs(cfg: dict[str, Any]) -> pd.DataFrame:
    """Every configured LLMBar subset as one pairs table (``category`` = the subset key)."""
    frames = []
    for name, source in cfg["llmbar"]["datasets"].items():
        ps = load_pairset("llmbar", source, name=name)
        for p in ps:
            p.category = name
        frames.append(pairs_frame(ps))
    if not frames:
        raise ConfigError("topk.llmbar.datasets is empty")
    return pd.concat(frames, ignore_index=True)


def llmbar_table(verdicts: pd.DataFrame, pairs: pd.DataFrame, cfg: dict[str, Any], seed: int) -> pd.DataFrame:
    rows = []
    for (ds, judge), g in verdicts.groupby(["category", "judge"], sort=True):
        p = pairs[pairs["category"] == ds]
        row = {"dataset": ds, "judge": judge, "simulated": any_true(g)}
        row.update(llmbar_mod.external_validity(g, p, n_folds=int(cfg["llmbar"]["n_folds"]),
                                                C=float(cfg["llmbar"]["C"]), seed=seed))
        rows.append(row)
    return pd.DataFrame(rows)


# -- rule topk_rank ------------------------------------------------------------------


def live_settings(cfg: dict[str, Any]) -> LiveSettings:
    """The live loop's settings from the ``topk`` config (``rank`` section, priors of ``model``)."""
    r = cfg.get("rank", {})
    m = cfg.get("model", {})
    budget = r.get("budget", {"calls": 600})
    stop = r.get("stop", {})
    return LiveSettings(
        k=int(r.get("k", 5)), budget_calls=budget.get("calls"), budget_usd=budget.get("usd"),
        batch=int(r.get("batch", 8)), stop_threshold=float(stop.get("threshold", 0.9)),
        stop_rule=str(stop.get("rule", "expected_recall")), min_calls=int(stop.get("min_calls", 0)),
        rule=str(r.get("rule", "topk")), n_samples=int(m.get("n_samples", 1500)),
        soft_labels=bool(r.get("soft_labels", True)), corr_warn=float(r.get("corr_warn", 0.3)),
        seed=int(r.get("seed", 0)), options=FitOptions(lam=float(m.get("lam", 1.0)), lam_b=float(m.get("lam_b", 0.1))),
    )


def rank_pool(entry: dict[str, Any], cfg: dict[str, Any], items_path: str, pool_name: str, cache_path: str | CallStore,
              max_error_rate: float | None) -> dict[str, pd.DataFrame]:
    """Rank one items file live with one judge (:func:`judgelab.topk.live.rank_live`)."""
    r = cfg.get("rank", {})
    pool = load_user_pool(items_path, list(r.get("covariates", ["length_std"])), question=r.get("question"))
    e = study_judge_entry(entry, cfg.get("sampling") or {}, bool(cfg.get("logit_verdicts", True)))
    judge = make_judge(JudgeSpec.from_dict(e, where=f"judge {entry['name']}"))
    try:
        with single_threaded_blas(), opened_cache(cache_path) as cache:
            res = rank_live(pool, judge, cache, live_settings(cfg), template=cfg["template"],
                            quality_scale=float(r.get("quality_scale", 1.0)), label=f"topk rank {pool_name}",
                            max_error_rate=max_error_rate)
    finally:
        judge.close()
    for w in res.warnings:
        log.warning("%s / %s: %s", pool_name, entry["name"], w)
    return result_tables(res, pool_name=pool_name, judge=entry["name"], simulated=judge.simulated)


# -- rule topk_tables ----------------------------------------------------------------


def probe_table(probe_verdicts: pd.DataFrame, probe_pairs_df: pd.DataFrame, entries: list[dict[str, Any]],
                cfg: dict[str, Any]) -> pd.DataFrame:
    plist = [pair_from_row(r, where=f"probe pairs row {i}") for i, r in enumerate(table_rows(probe_pairs_df))]
    planted = {}
    for e in entries:
        if is_simulated(e):
            j = make_judge(JudgeSpec.from_dict(study_judge_entry(e, cfg.get("sampling") or {}), where=e["name"]))
            planted[e["name"]] = planted_probabilities(j, plist, cfg["template"])
    return probe_summary(probe_verdicts, planted)


def read_eval_tables(paths: Sequence[str]) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Stack the per-judge ``recall``, ``params`` and ``budget`` tables (by file name)."""
    from pathlib import Path

    from judgelab.io import read_table

    frames: dict[str, list[pd.DataFrame]] = {"recall": [], "params": [], "budget": []}
    for p in paths:
        frames[Path(p).stem].append(read_table(p))
    return tuple(pd.concat(frames[t], ignore_index=True) for t in ("recall", "params", "budget"))  # type: ignore[return-value]


def study_tables(recall: pd.DataFrame, params: pd.DataFrame, budget: pd.DataFrame, cfg: dict[str, Any],
                 seed: int) -> dict[str, pd.DataFrame]:
    s = settings_from_config(cfg, seed)
    judges = T.table_judges(recall, params, k=s.k, lam_b=s.lam_b)
    at = int(cfg["ablation_budget"])
    at = at if at in set(budget["budget"]) else int(budget["budget"].max())
    reasons = T.judge_reasons(recall)
    return {
        "table1_judges": judges,
        "table2_correctness": T.table_correctness(recall, k=s.k, lam_b=s.lam_b, seed=seed),
        "shrinkage": T.table_shrinkage(recall, k=s.k),
        "table3_budget": T.table_budget(budget, seed=seed, reasons=reasons),
        "table4_ablation": T.table_ablation(budget, at_budget=at, reasons=reasons),
        "table4_recall_at_k": T.table_recall_at_k(recall, lam_b=s.lam_b),
        "frontier": T.table_frontier(budget, recall, n_items=int(cfg["items"]["n_items"]), k=s.k, lam_b=s.lam_b),
        "spearman": T.table_spearman(judges),
    }


# -- rule topk_figures ---------------------------------------------------------------


def _any_simulated(df: pd.DataFrame) -> bool:
    return any_true(df)


def make_figures(*, budgets: list[pd.DataFrame], synthetic: pd.DataFrame, scores: pd.DataFrame,
                 allocation: pd.DataFrame, judges: pd.DataFrame, frontier: pd.DataFrame, cfg: dict[str, Any],
                 focus: str, config_hash: str, outputs: dict[str, str], simulated_inputs: str = "") -> None:
    """Figs. 2, 3, 4, 5, 7, 8 (judgelab.plots.topk); the synthetic simulator counts as simulated.
    ``simulated_inputs``: the simulated roles the inputs name, for every figure's stamp."""
    from judgelab.plots import topk as P

    k = int(cfg["items"]["k"])
    judge_budget = pd.concat(budgets, ignore_index=True)
    panel = judge_budget.assign(source=judge_budget["judge"])
    syn = synthetic.assign(source="synthetic: " + synthetic["scenario"].astype(str), simulated=True)
    sim = _any_simulated(judge_budget)
    P.recall_vs_budget(pd.concat([panel, syn], ignore_index=True), outputs["recall_vs_budget"], simulated=True,
                       config_hash=config_hash, simulated_inputs=simulated_inputs)
    first = scores[scores["oracle"] == scores["oracle"].min()]
    cov = str(cfg["covariates"][0]) if cfg["covariates"] else ""
    P.naive_vs_true(first, outputs["naive_vs_true"], k=k, covariate=cov,
                    title=f"{focus}, pool {int(first['oracle'].iloc[0])}, full data", simulated=_any_simulated(scores),
                    config_hash=config_hash, simulated_inputs=simulated_inputs)
    P.allocation(allocation, outputs["allocation"], title=f"{focus}: where the budget goes",
                 simulated=_any_simulated(allocation), config_hash=config_hash, simulated_inputs=simulated_inputs)
    at = int(cfg["ablation_budget"])
    fb = judge_budget[judge_budget["judge"] == focus]
    at = at if at in set(fb["budget"]) else int(fb["budget"].max())
    P.ablation(fb, outputs["ablation"], at_budget=at, title=f"{focus}: acquisition-score ablation",
               simulated=_any_simulated(fb), config_hash=config_hash, simulated_inputs=simulated_inputs)
    P.judges_recall_vs_c(judges, outputs["judges_recall_vs_c"], covariate=cov, simulated=_any_simulated(judges),
                         config_hash=config_hash, simulated_inputs=simulated_inputs)
    P.frontier(frontier, outputs["frontier"], simulated=sim, config_hash=config_hash, simulated_inputs=simulated_inputs)


# -- rule topk_flip_rate -------------------------------------------------------------


def flip_rate_tables(entry: dict[str, Any], cfg: dict[str, Any], items: pd.DataFrame, cache_path: str | CallStore,
                     max_error_rate: float | None, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The judge's repeated verdicts at ``topk.flip_rate.temperature`` and its flip-rate row
    (:mod:`judgelab.topk.flips`).  Sampled answers, so no logit verdicts (an arg max never flips)."""
    fr = cfg.get("flip_rate") or {}
    temperature, repeats = float(fr.get("temperature", 1.0)), int(fr.get("repeats", 5))
    e = study_judge_entry(entry, cfg.get("sampling") or {}, logit_verdicts=False)
    judge = make_judge(JudgeSpec.from_dict(e, where=f"judge {entry['name']}"))
    pairs = flip_pairs(judge_pools(items, cfg, str(entry["name"])), fr.get("n_pairs", 60), seed)
    own_seed = (e.get("sampling") or {}).get("seed")
    reqs = flip_requests(items, pairs, template=cfg["template"], quality_scale=float(cfg["quality_scale"]),
                         repeats=repeats, temperature=temperature, seed=None if own_seed is None else int(own_seed))
    try:
        with opened_cache(cache_path) as cache:
            table = collect_flips(judge, reqs, cache, template=cfg["template"], max_error_rate=max_error_rate)
        planted = planted_flip_rate(judge, reqs, table)
    finally:
        judge.close()
    summary = flip_summary(table, judge=str(entry["name"]), simulated=judge.simulated, temperature=temperature,
                           repeats=repeats, n_pairs=len(pairs), alpha=float(fr["alpha"]), planted=planted)
    return table, summary
