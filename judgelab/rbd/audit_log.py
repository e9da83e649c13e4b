"""A bias detector over a user's recorded verdict log: "how biased was my judge, per call?".

Input is the recorded verdict table of :mod:`judgelab.verdict_import` (any preset:
``alpaca_eval``, ``fastchat_pairwise``, ``arena_hard``, ``judgebench``, ``llmbar``,
``judgelab`` -- judgelab's own verdict tables -- or a custom mapping).  Each recorded
judgment becomes a :class:`~judgelab.rbd.detector.DetectorCase` for each requested bias
type, the judge's name and model standing in as the evaluator the detector is told about
(paper 001, I_MJ):

* ``verbosity`` -- one case per recorded call: the two responses as the judge saw them and
  its verdict (``Output (a)``/``(b)``);
* ``position`` -- one case per pair judged in *both* orders (the stored order is the
  "original", the swapped one the "second evaluation", as in the detector's training
  format); a pair judged in one order only is skipped and counted (``one_order``);
* ``bandwagon`` -- one case per call whose instruction carries a majority-opinion statement
  naming an output (e.g. "90% of people believe that Output (b) is better"); calls without
  one are skipped and counted (``no_statement``): without the statement there is nothing a
  bandwagon could follow;
* ``sentiment`` -- one case per call, the options numbered (the detector's sentiment format).

A call without an A/B verdict (a tie, a parse failure, an error) cannot be checked for a
bias that needs a choice; it is skipped and counted (``no_verdict``), never dropped silently.

No ground truth is needed: ``truth`` is ``""`` unless the log has gold
(``expected_verdict``).  With gold, ``truth`` is an Eq. 1-style label: for position Eq. 1
itself (correct in the stored order, wrong in the swapped one; ``truth_rule = eq1``); for
the single-call types ``yes`` when the verdict is wrong *and* follows the bias cue, ``no``
otherwise (``truth_rule = cue_error``).  The cue is observable without gold (``cue``):
position -- the same slot chosen in both orders; verbosity -- the chosen response has more
words; bandwagon -- the chosen output is the one the statement names; sentiment -- the chosen
response has the more positive tone (:func:`judgelab.datasets.features.text_features`).

A *simulated* detector reads its planted truth from the request (real detectors read only
the prompt).  Where a case has no truth, a simulated detector is told the cue instead, so a
stand-in run flags cue-following verdicts at its planted recall; the table's ``truth``
stays ``""`` and its ``simulated`` column says the labels are synthetic.

Per-call table (:data:`CALL_TABLE_COLUMNS`): the detector prediction columns of
:data:`judgelab.rbd.detector.PREDICTION_COLUMNS` (``evaluator`` is the audited judge,
``judge``/``backend``/``model`` the detector; ``pred`` is ``yes``/``no``/``""`` when the
detector's answer states no label) plus ``evaluator_model``, ``pair_id``, ``order``
(``AB``/``BA``, or ``AB+BA`` for position), ``verdict_shown``, ``cue``, ``truth_rule``,
``flagged`` and ``source_file``/``source_row``.

Per-judge summary (:data:`SUMMARY_COLUMNS`), one row per detector, audited judge and bias
type: ``n_cases``, ``n_yes``/``n_no``, ``n_unparsed`` (detector answers without a label:
``pred == ""``, whatever the status), ``n_error``/``n_refusal`` among them,
``flag_share`` = n_yes / (n_yes + n_no) with a Wilson 95% CI (unparsed answers are not
counted as either label but reported beside), ``cue_share`` (share of cases whose verdict
follows the cue), ``n_skipped`` (calls that gave no case, by reason in the skipped table),
and, where truth exists, ``n_labelled``, ``truth_yes`` and the detector's accuracy /
precision / recall against it (:func:`judgelab.rbd.metrics.detector_scores`; an unparsed answer
counts as wrong, and where no labelled case has a parsed answer the three are NaN, never 0);
``reason`` is empty on a scored row, and says why a row has no estimate: no detector answer
with a label (:mod:`judgelab.stats.unscored`'s wording), or no case at all (every call skipped).
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from judgelab.cache import CallCache, CallStore
from judgelab.config import ConfigError
from judgelab.datasets.features import text_features
from judgelab.io import any_true, table_rows, to_bool
from judgelab.judges.base import Judge
from judgelab.prompts import to_original_frame
from judgelab.rbd import metrics as M
from judgelab.rbd.detector import (
    PREDICTION_COLUMNS,
    DetectorCase,
    DetectorSpec,
    FewShotExample,
    run_detector,
)
from judgelab.rbd.prompts import BIAS_TYPES
from judgelab.stats.unscored import no_value_reason

SUBSET = "log"
SKIPPED_COLUMNS = ["evaluator", "bias_type", "reason", "n"]
META_COLUMNS = ["case_id", "evaluator_model", "pair_id", "order", "verdict_shown", "cue", "truth_rule",
                "source_file", "source_row", "log_simulated"]
CALL_TABLE_COLUMNS = [*PREDICTION_COLUMNS, "flagged", *[c for c in META_COLUMNS if c not in ("case_id", "log_simulated")]]
SUMMARY_COLUMNS = ["detector", "prompting", "simulated", "evaluator", "evaluator_model", "bias_type", "n_cases",
                   "n_yes", "n_no", "n_unparsed", "n_error", "n_refusal", "flag_share", "flag_ci_low",
                   "flag_ci_high", "cue_share", "n_skipped", "n_labelled", "truth_yes", "det_accuracy",
                   "det_precision", "det_recall", "reason"]

#: a majority-opinion statement naming an output, as the bandwagon set writes it (paper 001, Sec. 3)
_STATEMENT = re.compile(
    r"[^.\n]*\b(?:people|majority|most|users|experts|evaluators|popular)\b[^.\n]*?Output \(([abAB])\)[^.\n]*")
_IDX = {"A": 0, "B": 1}


@dataclass
class LogCases:
    """The detector cases of a log, their log-side columns and what was skipped."""

    cases: list[DetectorCase]
    meta: pd.DataFrame
    skipped: pd.DataFrame
    cue: dict[str, str] = field(default_factory=dict)  # case_id -> yes / no / "" (cue undetermined)


def find_statement(text: str | None) -> str:
    """The majority-opinion sentence of an instruction (``Output (a)``/``(b)`` lower-cased), or ``""``."""
    m = _STATEMENT.search(text or "")
    if not m:
        return ""
    return re.sub(r"Output \(([AB])\)", lambda x: f"Output ({x.group(1).lower()})", m.group(0).strip())


def _cue(bias: str, options: Sequence[str], verdict: Sequence[int], statement: str = "") -> str:
    """Does the verdict follow the bias cue: ``yes``/``no``, ``""`` when the options do not differ in it."""
    if bias == "position":
        return "yes" if verdict[0] == verdict[1] else "no"
    pick = verdict[0]
    if bias == "bandwagon":
        named = 0 if "Output (a)" in statement else 1 if "Output (b)" in statement else -1
        return "" if named < 0 else ("yes" if pick == named else "no")
    feats = [text_features(o or "") for o in options]
    vals = [f.words for f in feats] if bias == "verbosity" else [f.sentiment for f in feats]
    if vals[0] == vals[1]:
        return ""
    return "yes" if vals[pick] > vals[1 - pick] else "no"


def _gold_shown(row: dict[str, Any]) -> int:
    g = to_original_frame(row.get("expected_verdict") or None, row["order"]) if row.get("expected_verdict") else None
    return _IDX.get(g or "", -1)


def _shown(row: dict[str, Any]) -> list[str]:
    a, b = row.get("response_a") or "", row.get("response_b") or ""
    return [a, b] if row["order"] == "AB" else [b, a]


def log_cases(table: pd.DataFrame, bias_types: Sequence[str]) -> LogCases:
    """Every recorded judgment of ``table`` (a recorded verdict table) as detector cases."""
    unknown = sorted(set(bias_types) - set(BIAS_TYPES))
    if unknown or not bias_types:
        raise ConfigError(f"bias types {unknown or '(none)'}: choose one or more of {', '.join(BIAS_TYPES)}")
    missing = {"judge", "model", "pair_id", "item_id", "order", "instruction", "response_a", "response_b",
               "verdict_shown", "expected_verdict"} - set(table.columns)
    if missing:
        raise ConfigError(f"the verdict table lacks columns {sorted(missing)} (import it with judgelab.verdict_import)")
    cases: list[DetectorCase] = []
    meta: list[dict[str, Any]] = []
    cues: dict[str, str] = {}
    skipped: dict[tuple[str, str, str], int] = {}

    def skip(judge: str, bias: str, reason: str, n: int = 1) -> None:
        skipped[(judge, bias, reason)] = skipped.get((judge, bias, reason), 0) + n

    def add(case: DetectorCase, row: dict[str, Any], order: str, shown: str, cue: str, rule: str) -> None:
        cases.append(case)
        cues[case.case_id] = cue
        meta.append({"case_id": case.case_id, "evaluator_model": case.evaluator_model, "pair_id": row["pair_id"],
                     "order": order, "verdict_shown": shown, "cue": cue, "truth_rule": rule,
                     "source_file": str(row.get("source_file") or ""), "source_row": int(row.get("source_row") or 0),
                     "log_simulated": bool(row.get("simulated") or False)})

    rows = table_rows(table)
    for bias in bias_types:
        if bias == "position":
            by_pair: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
            for r in rows:
                by_pair.setdefault((str(r["judge"]), str(r["pair_id"])), {})[r["order"]] = r
            for (judge, pid), orders in sorted(by_pair.items()):
                if set(orders) != {"AB", "BA"}:
                    skip(judge, bias, "one_order")
                    continue
                ab, ba = orders["AB"], orders["BA"]
                v = [_IDX.get(ab["verdict_shown"] or "", -1), _IDX.get(ba["verdict_shown"] or "", -1)]
                if min(v) < 0:
                    skip(judge, bias, "no_verdict")
                    continue
                g = [_gold_shown(ab), _gold_shown(ba)]
                truth = M.bias_label(v[0], v[1], g[0], g[1]) if min(g) >= 0 else ""
                cue = _cue(bias, [], v)
                case = DetectorCase(
                    case_id=f"{judge}|{pid}|position", subset=SUBSET, set=str(ab.get("category") or SUBSET),
                    item_id=str(ab["item_id"]), evaluator=judge, evaluator_model=str(ab["model"] or judge),
                    bias_type=bias, answer_format="two_rounds", question=ab["instruction"] or "",
                    options=_shown(ab), swapped_options=_shown(ba), statement="", verdict=v, truth=truth)
                add(case, ab, "AB+BA", f"{ab['verdict_shown']},{ba['verdict_shown']}", cue, "eq1" if truth else "")
            continue
        for r in rows:
            judge = str(r["judge"])
            pick = _IDX.get(r["verdict_shown"] or "", -1)
            if pick < 0:
                skip(judge, bias, "no_verdict")
                continue
            statement = find_statement(r["instruction"]) if bias == "bandwagon" else ""
            if bias == "bandwagon" and not statement:
                skip(judge, bias, "no_statement")
                continue
            options = _shown(r)
            cue = _cue(bias, options, [pick], statement)
            gold = _gold_shown(r)
            truth = "" if gold < 0 else ("no" if pick == gold else ("yes" if cue == "yes" else "no"))
            case = DetectorCase(
                case_id=f"{judge}|{r['pair_id']}|{r['order']}|{bias}", subset=SUBSET,
                set=str(r.get("category") or SUBSET), item_id=str(r["item_id"]), evaluator=judge,
                evaluator_model=str(r["model"] or judge), bias_type=bias,
                answer_format="number" if bias == "sentiment" else "output_ab", question=r["instruction"] or "",
                options=options, swapped_options=[], statement=statement, verdict=[pick], truth=truth)
            add(case, r, r["order"], r["verdict_shown"], cue, "cue_error" if truth else "")
    skipped_df = pd.DataFrame([{"evaluator": j, "bias_type": b, "reason": why, "n": n}
                               for (j, b, why), n in sorted(skipped.items())], columns=SKIPPED_COLUMNS)
    return LogCases(cases=cases, meta=pd.DataFrame(meta, columns=META_COLUMNS), skipped=skipped_df, cue=cues)


def audit_calls(judge: Judge, spec: DetectorSpec, log: LogCases, cache: CallStore, *,
                examples: Sequence[FewShotExample] = (), max_error_rate: float | None = None) -> pd.DataFrame:
    """The detector's answer on every case of ``log`` through the call cache: the per-call table."""
    asked = log.cases
    if judge.simulated:  # a stand-in reads its planted truth; without gold it is told the cue (module docstring)
        asked = [c if c.truth else c.with_verdict(c.verdict, log.cue.get(c.case_id) or "no") for c in log.cases]
    table = run_detector(judge, spec, asked, cache, examples=examples, label="rbd log audit",
                         max_error_rate=max_error_rate)
    table["truth"] = [c.truth for c in log.cases]
    table["flagged"] = table["pred"] == "yes"
    out = table.merge(log.meta, on="case_id", how="left", validate="one_to_one")
    out["simulated"] = to_bool(out["simulated"]).fillna(False) | to_bool(out.pop("log_simulated")).fillna(False)
    return out[CALL_TABLE_COLUMNS]


def audit_summary(calls: pd.DataFrame, skipped: pd.DataFrame, *, detector: str = "", prompting: str = "",
                  simulated: bool = False, evaluator_models: dict[str, str] | None = None) -> pd.DataFrame:
    """Share flagged per detector, audited judge and bias type (module docstring), skipped calls included."""
    rows = []
    keys = set(map(tuple, calls[["detector", "evaluator", "bias_type"]].drop_duplicates().to_numpy()))
    dets = sorted(set(calls["detector"])) or [detector]
    for d in dets:
        keys |= {(d, j, b) for j, b in skipped[["evaluator", "bias_type"]].drop_duplicates().to_numpy()}
    for det, judge, bias in sorted(keys):
        g = calls[(calls["detector"] == det) & (calls["evaluator"] == judge) & (calls["bias_type"] == bias)]
        sk = skipped[(skipped["evaluator"] == judge) & (skipped["bias_type"] == bias)]
        pred = g["pred"].astype(str)
        n_yes, n_no = int((pred == "yes").sum()), int((pred == "no").sum())
        unparsed = g[~pred.isin(["yes", "no"])]
        from judgelab.stats.intervals import wilson_interval  # slow import (statsmodels)

        lo, hi = wilson_interval(n_yes, n_yes + n_no)
        lab = g[g["truth"].isin(["yes", "no"])]
        # Scored only where the detector stated a label on some labelled case: an unparsed answer counts
        # as wrong beside parsed ones (as in the detector metrics), but a group whose every answer is
        # unparsed has no estimate (NaN; the answers are in n_unparsed), not an accuracy or recall of 0.
        scored = len(lab) and lab["pred"].astype(str).isin(["yes", "no"]).any()
        s = M.detector_scores(list(lab["truth"]), list(lab["pred"])) if scored else None
        cue = g["cue"][g["cue"] != ""]
        reason = (no_value_reason(g["status"], what="label", usable=pred.isin(["yes", "no"]).to_numpy()) if len(g)
                  else f"no case: {int(sk['n'].sum())} recorded call(s) skipped (see skipped.csv)")
        rows.append({
            "detector": det, "prompting": g["prompting"].iloc[0] if len(g) else prompting,
            "simulated": any_true(g) if len(g) else simulated, "evaluator": judge,
            "evaluator_model": g["evaluator_model"].iloc[0] if len(g) else (evaluator_models or {}).get(judge, judge),
            "bias_type": bias, "n_cases": len(g), "n_yes": n_yes, "n_no": n_no, "n_unparsed": len(unparsed),
            "n_error": int((unparsed["status"] == "error").sum()),
            "n_refusal": int((unparsed["status"] == "refusal").sum()),
            "flag_share": n_yes / (n_yes + n_no) if n_yes + n_no else float("nan"), "flag_ci_low": lo,
            "flag_ci_high": hi, "cue_share": float((cue == "yes").mean()) if len(cue) else float("nan"),
            "n_skipped": int(sk["n"].sum()), "n_labelled": len(lab),
            "truth_yes": int((lab["truth"] == "yes").sum()),
            "det_accuracy": s.accuracy if s else float("nan"), "det_precision": s.precision if s else float("nan"),
            "det_recall": s.recall if s else float("nan"), "reason": reason,
        })
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)


# ---------------------------------------------------------------------------------
# which detector: a configured rbd detector, a configured judge, or a YAML file


def resolve_detector(config: dict[str, Any], name: str, *, prompting: str = "rbd") -> DetectorSpec:
    """``name`` is an ``rbd.detectors`` name, a judge name of the config, or ``FILE.yaml[:JUDGE]``
    (a judge set; its only judge, or the one named after the colon)."""
    from judgelab.config import load_yaml

    path, _, pick = name.partition(":") if name.split(":")[0].endswith((".yaml", ".yml")) else (name, "", "")
    if path.endswith((".yaml", ".yml")):
        data = load_yaml(Path(path))
        listed = data.get("judges") if isinstance(data, dict) and "judges" in data else [data]
        entries = [e for e in (listed if isinstance(listed, list) else []) if isinstance(e, dict)]
        if pick:
            entries = [e for e in entries if e.get("name") == pick]
        if len(entries) != 1:
            names = ", ".join(str(e.get("name")) for e in (data.get("judges") or []) if isinstance(e, dict))
            raise ConfigError(f"{path}: name one judge as {path}:NAME (found {names or 'none'})"
                              if not pick else f"{path}: no judge named {pick!r}; known: {names}")
        e = entries[0]
        if "judge" in e or "trained" in e:  # an rbd detector entry
            return DetectorSpec.from_entry(e, where=path)
        return DetectorSpec.from_entry({"prompting": prompting, "judge": e}, where=path)
    for i, e in enumerate((config.get("rbd") or {}).get("detectors") or []):
        spec = DetectorSpec.from_entry(e, where=f"config rbd.detectors[{i}]")
        if spec.name == name:
            return spec
    for e in list(config.get("judges") or []) + list(config.get("replay_judges") or []):
        if e.get("name") == name:
            return DetectorSpec.from_entry({"prompting": prompting, "judge": e}, where=f"judge {name}")
    known = [DetectorSpec.from_entry(e, where="rbd.detectors").name for e in (config.get("rbd") or {}).get("detectors")
             or []] + [e["name"] for e in config.get("judges") or []]
    raise ConfigError(f"--detector: no rbd detector or judge named {name!r}; known: {', '.join(known)}")


def detector_judge(spec: DetectorSpec, *, model_dir: str | Path | None = None) -> Judge:
    """The judge behind a detector spec (a trained run: its merged checkpoint in ``model_dir``)."""
    from judgelab.config import JudgeSpec
    from judgelab.judges import make_judge
    from judgelab.rbd.train import trained_detector_judge

    if spec.prompting == "classifier":
        raise ConfigError(f"detector {spec.name!r}: the label-only classifier gives no reasoning; use a generating "
                          "detector for a log audit")
    if spec.trained:
        model_dir = Path(model_dir or f"results/rbd/train/{spec.trained}/model")
        if not (model_dir / "meta.json").exists():
            raise ConfigError(f"detector {spec.name!r}: no trained run at {model_dir} (run the rbd_train rule first)")
        return trained_detector_judge(model_dir, spec.name, options=spec.options,
                                      sampling={"max_tokens": spec.max_tokens or 64})
    if spec.judge is None:
        raise ConfigError(f"detector {spec.name!r}: give a judge entry or a trained run")
    return make_judge(JudgeSpec.from_dict(spec.judge, where=f"detector {spec.name}"))


def detector_examples(spec: DetectorSpec, traces: str | Path | None, seed: int) -> list[FewShotExample]:
    """The few-shot examples a prompting needs (from a supervision traces table), else none."""
    from judgelab.rbd.detector import few_shot_examples
    from judgelab.rbd.prompts import DETECTOR_PROMPTS

    shots = DETECTOR_PROMPTS.get(spec.prompting).shots
    if not shots:
        return []
    if not traces:
        raise ConfigError(f"detector {spec.name!r}: prompting {spec.prompting!r} needs teacher traces "
                          "(results/rbd/supervision/traces.parquet; --traces)")
    return few_shot_examples(pd.read_parquet(traces), seed, shots, spec.example_max_words)


def run_log_audit(table: pd.DataFrame, bias_types: Sequence[str], spec: DetectorSpec, judge: Judge,
                  cache: CallStore, *, examples: Sequence[FewShotExample] = (),
                  max_error_rate: float | None = None) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(per-call table, per-judge summary, skipped counts) of one detector over a recorded verdict table."""
    log = log_cases(table, bias_types)
    calls = audit_calls(judge, spec, log, cache, examples=examples, max_error_rate=max_error_rate)
    models = dict(zip(table["judge"].astype(str), table["model"].astype(str), strict=False))
    summary = audit_summary(calls, log.skipped, detector=spec.name, prompting=spec.prompting,
                            simulated=judge.simulated, evaluator_models=models)
    return calls, summary, log.skipped


# ---------------------------------------------------------------------------------
# CLI: judgelab detect-bias


def cmd_detect_bias(args: argparse.Namespace) -> int:
    from judgelab.config import default_config_paths, load_config
    from judgelab.io import InputError, staged_folder, write_table
    from judgelab.verdict_import.cli import verdicts_from_args

    if Path(args.out).exists() and not Path(args.out).is_dir():
        raise InputError(f"{args.out}: exists and is a file; --out needs a folder (a new or an existing one)")
    config = load_config(*default_config_paths(), *[Path(p) for p in args.configfile or []])
    spec = resolve_detector(config, args.detector, prompting=args.prompting)
    table = verdicts_from_args(args)
    examples = detector_examples(spec, args.traces, int(config.get("seed", 0)))
    judge = detector_judge(spec, model_dir=args.model_dir)
    try:
        with CallCache(args.cache or config["cache"]) as cache:
            calls, summary, skipped = run_log_audit(table, args.bias, spec, judge, cache, examples=examples,
                                                    max_error_rate=args.max_error_rate)
    finally:
        judge.close()
    out = Path(args.out)
    with staged_folder(out) as stage:  # the three tables appear together, replacing an old set whole
        write_table(calls, stage / "calls.parquet")
        write_table(summary, stage / "summary.csv")
        write_table(skipped, stage / "skipped.csv")
    show = summary[["evaluator", "bias_type", "n_cases", "n_yes", "n_no", "n_unparsed", "flag_share", "flag_ci_low",
                    "flag_ci_high", "n_skipped"]]
    with pd.option_context("display.width", 160, "display.max_rows", 500):
        print(show.round(3).to_string(index=False))
    sim = " (SIMULATED detector: synthetic labels)" if any_true(summary) else ""
    print(f"\n{len(calls)} detector calls on {len(table)} recorded verdicts{sim}; "
          f"wrote {out}/calls.parquet, summary.csv, skipped.csv")
    return 0


def add_command(sub: argparse._SubParsersAction) -> None:
    from judgelab.io import add_out_folder
    from judgelab.verdict_import.cli import add_log_arguments

    a = sub.add_parser("detect-bias", help="a bias detector (paper 001) over recorded verdicts, per call")
    add_log_arguments(a)
    a.add_argument("--detector", required=True,
                   help="an rbd.detectors name, a judge name of the config, or FILE.yaml[:JUDGE] (a judge set)")
    a.add_argument("--prompting", default="rbd", help="detector prompt for a plain judge (default rbd)")
    a.add_argument("--bias", nargs="+", default=["verbosity", "position"], choices=list(BIAS_TYPES),
                   help="bias types to check (default: verbosity position)")
    add_out_folder(a, "output folder: calls.parquet, summary.csv, skipped.csv")
    a.add_argument("--configfile", action="append", help="extra config file(s), merged in order")
    a.add_argument("--cache", help="SQLite call cache (default: the config's)")
    a.add_argument("--traces", help="teacher traces table for few-shot promptings")
    a.add_argument("--model-dir", help="a trained detector's run folder (default results/rbd/train/<run>/model)")
    a.add_argument("--max-error-rate", type=float, default=None,
                   help="fail if more than this share of detector calls errors (default: report and continue)")
    a.set_defaults(fn=cmd_detect_bias)
