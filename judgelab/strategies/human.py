"""Human annotations of STYLE pairs (CSV) and the human-vs-judge markdown gap (paper 003, Table 9).

CSV columns (one row per annotator x pair):

============== ================================================================
annotator      annotator id
pair_id        a STYLE / STYLE_BA pair id of the controlled set
markdown_slot  1 or 2: which response, *as shown to this annotator*, was markdown
               (the paper randomised order and slots per annotator)
choice         1, 2 or tie: the response the annotator preferred, as shown
confidence     optional (1-3 in the paper's protocol)
============== ================================================================

A choice is decoded to markdown / prose / tie through ``markdown_slot``.  An annotator who
picked the same slot on every pair carries no information about markdown and is excluded (the
paper excluded such a third annotator: "Response 1" on all 30 pairs); ``exclude_constant_slot``
turns this off.  The human aggregate is the pooled markdown rate over the kept annotators'
verdicts (Wilson 95% CI), the inter-annotator agreement the share of commonly annotated pairs
on which two kept annotators made the same decoded choice.  Judges' rates are read from their
B0 verdicts on the same pairs; ``gap`` = judge markdown rate - human aggregate.
"""

from __future__ import annotations

from itertools import combinations
from pathlib import Path
from typing import cast

import pandas as pd

from judgelab.io import InputError, any_true, table_tuples
from judgelab.stats.intervals import DEFAULT_ALPHA, wilson_interval
from judgelab.stats.unscored import blank
from judgelab.strategies.analysis import no_verdict_reason

REQUIRED = ("annotator", "pair_id", "markdown_slot", "choice")


def load_annotations(path: str | Path) -> pd.DataFrame:
    """Read and validate the annotations CSV; errors name the file, row and column."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"human annotations file not found: {p}")
    try:
        df = pd.read_csv(p, dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise InputError(f"{p}: not a readable CSV ({exc})") from None
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing:
        raise InputError(f"{p}: missing column(s) {missing}; expected {list(REQUIRED)}")
    for i, r in enumerate(table_tuples(df, index=False), start=2):  # row 1 is the header
        if not r.annotator.strip() or not r.pair_id.strip():
            raise InputError(f"{p} row {i}: empty annotator or pair_id")
        if r.markdown_slot.strip() not in ("1", "2"):
            raise InputError(f"{p} row {i}: column 'markdown_slot' must be 1 or 2, got {r.markdown_slot!r}")
        if r.choice.strip().lower() not in ("1", "2", "tie"):
            raise InputError(f"{p} row {i}: column 'choice' must be 1, 2 or tie, got {r.choice!r}")
    df = df.assign(markdown_slot=df["markdown_slot"].str.strip(), choice=df["choice"].str.strip().str.lower())
    dup = df.duplicated(["annotator", "pair_id"])
    if dup.any():
        i = int(dup.to_numpy().nonzero()[0][0]) + 2
        raise InputError(f"{p} row {i}: annotator {df['annotator'].iloc[i - 2]!r} annotated pair "
                         f"{df['pair_id'].iloc[i - 2]!r} twice")
    df["decoded"] = [("tie" if c == "tie" else ("markdown" if c == m else "prose"))
                     for c, m in zip(df["choice"], df["markdown_slot"], strict=True)]
    return df


def human_gap_table(ann: pd.DataFrame, sv: pd.DataFrame, pairs: pd.DataFrame, *, strategy: str = "B0",
                    exclude_constant_slot: bool = True, alpha: float = DEFAULT_ALPHA) -> pd.DataFrame:
    """Table 9: markdown / prose rates of annotators, their aggregate, and of every judge."""
    known = set(pairs["pair_id"])
    unknown = sorted(set(ann["pair_id"]) - known)
    if unknown:
        raise InputError(f"human annotations name pair(s) not in the controlled set: {unknown[:5]}")
    rows = []
    kept: list[str] = []
    for a, g in ann.groupby("annotator", sort=True):
        constant = g["choice"].nunique() == 1 and g["choice"].iloc[0] != "tie" and len(g) > 1
        excluded = bool(exclude_constant_slot and constant)
        if not excluded:
            kept.append(cast("str", a))
        rows.append({"row": "annotator", "who": a, "n": len(g), "markdown_rate": (g["decoded"] == "markdown").mean(),
                     "prose_rate": (g["decoded"] == "prose").mean(), "tie_rate": (g["decoded"] == "tie").mean(),
                     "constant_slot": constant, "excluded": excluded})
    k = ann[ann["annotator"].isin(kept)]
    n_md, n = int((k["decoded"] == "markdown").sum()), len(k)
    lo, hi = wilson_interval(n_md, n, alpha=alpha)
    agree = []
    for a, b in combinations(kept, 2):
        m = ann[ann["annotator"] == a].merge(ann[ann["annotator"] == b], on="pair_id")
        agree.extend((m["decoded_x"] == m["decoded_y"]).tolist())
    human = n_md / n if n else float("nan")
    rows.append({"row": "human_aggregate", "who": "+".join(kept), "n": n, "markdown_rate": human,
                 "prose_rate": (k["decoded"] == "prose").mean() if n else float("nan"),
                 "tie_rate": (k["decoded"] == "tie").mean() if n else float("nan"), "ci_low": lo, "ci_high": hi,
                 "inter_annotator_agreement": sum(agree) / len(agree) if agree else float("nan")})
    ids = set(ann["pair_id"])
    tgt = pairs.set_index("pair_id")["target_side"]
    j = sv[(sv["strategy"] == strategy) & sv["pair_id"].isin(ids)]
    for judge, g in j.groupby("judge", sort=True):
        side = g["pair_id"].map(tgt)
        md = float((g["verdict"] == side).mean())
        prose = float(((g["verdict"] != side) & g["verdict"].isin(["A", "B"])).mean())
        # a judge with no verdict at all keeps its row: rates NaN (not a 0 % markdown rate), with why
        rows.append(blank({"row": "judge", "who": judge, "simulated": any_true(g), "n": len(g),
                           "markdown_rate": md, "prose_rate": prose, "tie_rate": float((g["verdict"] == "tie").mean()),
                           "no_verdict_rate": float((g["verdict"] == "").mean()), "gap_vs_human": md - human,
                           "strategy": strategy}, ("markdown_rate", "prose_rate", "tie_rate", "gap_vs_human"),
                          no_verdict_reason(g)))
    out = pd.DataFrame(rows)
    out["reason"] = out["reason"].fillna("") if "reason" in out else ""
    # the input's own marker travels with every row built from it: the shipped file is
    # illustrative (reconstructed from published marginals), real annotations are not
    sources = sorted({str(x) for x in ann.get("source", pd.Series(dtype=str)) if str(x).strip()})
    out["illustrative"] = any("illustrative" in x.lower() for x in sources)
    out["annotation_source"] = "; ".join(sources)
    return out
