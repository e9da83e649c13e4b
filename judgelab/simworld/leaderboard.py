"""A planted-truth leaderboard: many models against one baseline, judged by a style-biased judge.

Each model ``m`` has a known quality ``q_m`` (the baseline 0) and its own habits: a typical
answer length (log-normal around ``length_m``, uncorrelated with quality, so that a length-loving
judge reorders the board; one model's answers vary by ``within_sd`` in log length, which is what
lets a correction tell the judge's taste for length from the model's quality) and a markdown rate.  The simulated judge sees the baseline first and
prefers the model's answer with

    P = sigma(q_m - q_b + beta_len * (t_m - t_b) / (t_m + t_b) + beta_md * (d_m - d_b) / (d_m + d_b + 1))

(``t`` words, ``d`` markdown elements per word), and states a discrete verdict drawn from it.
The true score of a model is its win rate against the baseline at equal style,
``100 * sigma(q_m - q_b)``; the baseline's style is typical of the models' (its length is the
median model's), so the three corrections' estimands (equal length, mean style, equal style)
coincide with it.  The table is a recorded verdict table (``simulated`` True), so the figure
made from it is stamped.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import expit

from judgelab.verdict_import.importer import RECORDED_COLUMNS


@dataclass(frozen=True)
class PlantedBoard:
    table: pd.DataFrame
    truth: pd.DataFrame  # model, quality, true_score (percent), mean_words


def _answer(words: int, md: int) -> str:
    body = " ".join(["word"] * max(words - 2 * md, 1))
    return "\n".join(["- **point**" for _ in range(md)] + [body])


def planted_board(n_models: int = 24, n_items: int = 200, *, seed: int = 0, beta_len: float = 3.0,
                  beta_md: float = 1.0, quality_sd: float = 0.8, length_sd: float = 0.5, within_sd: float = 0.6,
                  judge: str = "sim-length-biased") -> PlantedBoard:
    """The verdict table and the truth of one planted world (see the module doc)."""
    rng = np.random.default_rng(seed)
    q = rng.normal(0.0, quality_sd, n_models)
    log_len = np.log(150) + rng.normal(0.0, length_sd, n_models)
    md_rate = rng.uniform(0.0, 0.04, n_models)
    base_len, base_md = float(np.median(log_len)), float(np.median(md_rate))
    names = [f"model-{k:03d}" for k in range(n_models)]
    item = np.tile(np.arange(n_items), n_models)
    m = np.repeat(np.arange(n_models), n_items)
    t_m = np.maximum(5, np.round(np.exp(log_len[m] + rng.normal(0, within_sd, len(m))))).astype(int)
    t_b_item = np.maximum(5, np.round(np.exp(base_len + rng.normal(0, within_sd, n_items)))).astype(int)
    t_b = t_b_item[item]
    md_m = rng.poisson(md_rate[m] * t_m)
    md_b_item = rng.poisson(base_md * t_b_item)
    md_b = md_b_item[item]
    d_m, d_b = md_m / t_m, md_b / t_b
    logit = q[m] + beta_len * (t_m - t_b) / (t_m + t_b) + beta_md * (d_m - d_b) / (d_m + d_b + 1)
    win = rng.random(len(m)) < expit(logit)
    base_texts = [_answer(int(t), int(k)) for t, k in zip(t_b_item, md_b_item, strict=False)]
    n = len(m)
    verdict = np.where(win, "B", "A")
    table = pd.DataFrame({
        "judge": judge, "backend": "simulated", "model": judge, "family": "unknown",
        "pair_id": [f"q{i:05d}|baseline|{names[k]}" for i, k in zip(item, m, strict=False)],
        "item_id": [f"q{i:05d}" for i in item], "order": "AB",
        "instruction": [f"question {i}" for i in item],
        "response_a": [base_texts[i] for i in item],
        "response_b": [_answer(int(t), int(k)) for t, k in zip(t_m, md_m, strict=False)],
        "model_a": "baseline", "model_b": [names[k] for k in m], "family_a": "unknown", "family_b": "unknown",
        "verdict_shown": verdict, "verdict": verdict, "preference": win.astype(float), "label": verdict,
        "expected_verdict": pd.NA, "correct": pd.NA, "status": "ok", "parse_method": "simulated", "raw_text": "",
        "simulated": True, "category": "", "source_file": "planted", "source_row": np.arange(n) % n_items,
    }, columns=RECORDED_COLUMNS)
    truth = pd.DataFrame({"model": names, "quality": q, "true_score": 100 * expit(q),
                          "mean_words": np.exp(log_len)})
    return PlantedBoard(table=table, truth=truth)
