"""Simulated writers of study ``rbd`` (paper 001): set construction, evaluator, teacher.

Registered as generation tasks of the simulated backend (``truth["gen"]["task"]``), so
the study plants its behaviour without touching shared code paths.  Every writer is a
deterministic function of the request and the judge's seed (the uniforms ``d``), reads the
judge's profile, and answers in the raw format the prompt asks for:

* ``rbd_wrong_math`` -- a weak model's long *wrong* GSM8K solution: the gold steps with
  perturbed calculator results, filler sentences (about 1.4x the gold length, paper 001:
  139 vs 103 tokens) and a wrong final ``#### n``;
* ``rbd_tone`` -- a tone rewrite of an option (paper 001, E.2): positive / negative tone
  words around the unchanged content (the sentiment cue of :mod:`judgelab.datasets.features`);
* ``rbd_long_wrong`` -- a short wrong factual answer extended into a long wrong explanation;
* ``rbd_choice`` -- an evaluator on a multiple-choice item: a multinomial logit whose
  utilities are competence on the gold option plus the judge's planted cue coefficients
  (sentiment, verbosity, markdown, first position), with Gumbel noise -- for two options it
  equals the pairwise ordered logit without tie;
* ``rbd_revise`` -- an evaluator re-prompted with a detector's bias analysis: it keeps a
  flagged verdict with probability ``stubbornness`` when the verdict is wrong and
  ``keep_correct`` when it is right (profile fields), otherwise switches to another option
  (the other one of a pair; among several, by its competence);
* ``rbd_teacher`` -- a teacher's ``<think>`` trace in the three parts the paper describes
  (the bias type; a comparison of the options; the evaluator's capability) and a Yes/No
  label that is right with the judge's label skill (``label_recall`` / ``label_specificity``
  / ``label_accuracy``).
"""

from __future__ import annotations

import hashlib
import math
import re
from typing import Any

from judgelab.datasets.features import length_log_ratio, text_features
from judgelab.judges.simulated import GENERATORS, REFUSAL_TEXT, SIMULATED_TEXT_NOTE, SimulatedJudge, _Draws
from judgelab.rbd.prompts import write_answer
from judgelab.records import JudgeRequest

_ANNOT = re.compile(r"<<([^<>=]*)=([^<>]*)>>(-?[\d,]*\.?\d+)")
_MATH_FILLERS = (
    "First, let us carefully identify every quantity given in the problem.",
    "We need to keep track of each step so that nothing is missed.",
    "Now we combine this with the result from the previous step.",
    "It is important to double-check the units at this point.",
    "This intermediate value will be used in the next calculation.",
    "Let me restate what we know so far before moving on.",
)
_POSITIVE = (
    ("Absolutely, {t}", "clearly an excellent and brilliant answer!"),
    ("Wonderfully, {t}", "certainly a remarkable and outstanding choice!"),
    ("Confidently, {t}", "a perfect, impressive and clearly correct option!"),
)
_NEGATIVE = (
    ("Sadly, {t}", "merely a dull and disappointing answer, unfortunately."),
    ("Regrettably, {t}", "a rather weak and unimpressive option, sadly."),
    ("Unfortunately, {t}", "merely a mediocre and unsatisfying choice, regrettably."),
)


def _uniforms(d: _Draws, n: int, tag: str) -> list[float]:
    """``n`` more uniforms derived from the request's draws (stable per request and tag)."""
    seed = f"{d[0]!r}|{d[1]!r}|{d[3]!r}|{tag}"
    out = []
    for k in range(n):
        h = hashlib.blake2b(f"{seed}|{k}".encode(), digest_size=8).digest()
        out.append((int.from_bytes(h, "big") + 0.5) / 2**64)
    return out


def _info(req: JudgeRequest) -> dict[str, Any]:
    return dict(req.truth.get("rbd") or {})


def _fmt_num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:.2f}"


def _shift(value: str, u: float) -> str:
    """A different number near ``value``: +/- 1..9 (never negative), chosen by ``u``."""
    try:
        v = float(value.replace(",", ""))
    except ValueError:
        return value + "1"
    k = 1 + int(u * 9) % 9
    return _fmt_num(v + k if u < 0.5 or v - k < 0 else v - k)


def _same_number(a: str, b: str) -> bool:
    try:
        return float(a.replace(",", "")) == float(b.replace(",", ""))
    except ValueError:
        return a.strip() == b.strip()


@GENERATORS.register("rbd_wrong_math")
def _gen_wrong_math(req: JudgeRequest, judge: SimulatedJudge, d: _Draws) -> str:
    gen = req.truth.get("gen", {})
    gold = str(gen.get("gold_answer", ""))
    lines = [ln for ln in gold.split("\n") if ln.strip() and not ln.strip().startswith("####")]
    us = _uniforms(d, 2 * len(lines) + 2, "wrong_math")
    out = [_MATH_FILLERS[int(us[0] * len(_MATH_FILLERS))]]
    last: list[str] = []
    for i, ln in enumerate(lines):
        def repl(m: re.Match[str], u: float = us[2 * i + 1]) -> str:
            w = _shift(m.group(2), u)
            last.append(w)
            return f"<<{m.group(1)}={w}>>{w}"

        out.append(_ANNOT.sub(repl, ln))
        if i % 2 == 1:  # a filler every other step: ~1.35x the gold length, as the paper's 139 vs 103
            out.append(_MATH_FILLERS[(i + 1 + int(us[2 * i + 2] * 5)) % len(_MATH_FILLERS)])
    m = re.search(r"####\s*(-?[\d,]*\.?\d+)", gold)
    final = m.group(1) if m else "0"
    wrong = last[-1] if last else _shift(final, us[-1])
    if _same_number(wrong, final):
        wrong = _shift(final, us[-1])
    out.append(f"Therefore, the final answer is {wrong}. {SIMULATED_TEXT_NOTE}")
    return "\n".join(out) + f"\n#### {wrong}"


@GENERATORS.register("rbd_tone")
def _gen_tone(req: JudgeRequest, judge: SimulatedJudge, d: _Draws) -> str:
    gen = req.truth.get("gen", {})
    text = str(gen.get("text", "")).strip().rstrip(".!")
    pool = _POSITIVE if gen.get("tone") == "positive" else _NEGATIVE
    head, tail = pool[int(d[2] * len(pool))]
    return f"{head.format(t=text)}, {tail}"


@GENERATORS.register("rbd_long_wrong")
def _gen_long_wrong(req: JudgeRequest, judge: SimulatedJudge, d: _Draws) -> str:
    gen = req.truth.get("gen", {})
    wrong = str(gen.get("wrong", "")).strip().rstrip(".")
    q = str(gen.get("question", "")).strip().split("\n")[-1]
    us = _uniforms(d, 4, "long_wrong")
    parts = [
        f"The answer is {wrong}.",
        f"To see why, consider what the question asks: {q}",
        f"Looking at the relevant facts, {wrong} is the option that matches them best.",
        "This is a well-known result that is often covered in introductory material.",
        f"Other options may look plausible at first, but on closer inspection {wrong} fits the description more "
        "closely.",
        "It is also consistent with the general principles that apply in this area.",
        f"In summary, {wrong} is the correct choice. {SIMULATED_TEXT_NOTE}",
    ]
    k = 5 + int(us[0] * 2)
    return " ".join(parts[:k] + parts[-1:])


def _logit_choice(utilities: list[float], us: list[float]) -> int:
    """Gumbel-max: argmax of utility + Gumbel noise = a draw from the multinomial logit."""
    best, arg = -math.inf, 0
    for k, (u, x) in enumerate(zip(utilities, us, strict=False)):
        v = u - math.log(-math.log(x))
        if v > best:
            best, arg = v, k
    return arg


def _reliability(judge: SimulatedJudge, d: _Draws) -> str | None:
    """A refusal or a malformed answer at the judge's planted rates (else None)."""
    if d[5] < judge.profile.refusal_rate:
        return REFUSAL_TEXT
    if d[6] < judge.profile.malformed_rate:
        return "Several of these options seem plausible, and it is hard to choose just one of them."
    return None


@GENERATORS.register("rbd_choice")
def _gen_choice(req: JudgeRequest, judge: SimulatedJudge, d: _Draws) -> str:
    info = _info(req)
    opts = [req.slots[str(k + 1)] for k in range(len(req.slots))]
    gold = int(info.get("gold", -1))
    feats = [text_features(o) for o in opts]
    mean_words = sum(f.words for f in feats) / max(1, len(feats))
    c = judge.coef
    util = []
    for k, f in enumerate(feats):
        u = judge.profile.competence * (1.0 if k == gold else 0.0)
        u += c["sentiment"] * f.sentiment + c["markdown"] * f.markdown
        u += c["verbosity"] * max(-3.0, min(3.0, math.log2((f.words + 1.0) / (mean_words + 1.0))))
        u += c["position"] * (1.0 if k == 0 else 0.0)
        util.append(u)
    bad = _reliability(judge, d)
    if bad is not None:
        return bad
    return write_answer("number", [_logit_choice(util, _uniforms(d, len(opts), "choice"))])


_ANALYSIS_MARK = "### Bias Analysis:\n"
_ABOUT_OPTIONS = re.compile(r"output \([ab]\)|option|longer|shorter|order|swap|tone|statement|majority|correct",
                            re.IGNORECASE)


def analysis_informativeness(prompt: str) -> float:
    """How much the bias analysis in a revision prompt says (0..1), read from the prompt text.

    The analysis is the paragraph after the revision template's "### Bias Analysis:" heading, less
    the think tags and the final Yes/No label.  Empty (a label-only detector): 0.  Otherwise it
    grows with its words (full at 40) and is halved when it names neither an option nor a cue.
    """
    i = prompt.rfind(_ANALYSIS_MARK)
    if i < 0:
        return 0.0
    rest = prompt[i + len(_ANALYSIS_MARK):]
    end = rest.find("\n\n")  # the template's next paragraph (the simulated analyses have no blank line)
    body = re.sub(r"</?think>", " ", rest if end < 0 else rest[:end])
    body = re.sub(r"\b(yes|no)[.!]?\s*$", "", body.strip(), flags=re.IGNORECASE)
    words = re.findall(r"[A-Za-z]+", body)
    if not words:
        return 0.0
    return min(1.0, len(words) / 40.0) * (1.0 if _ABOUT_OPTIONS.search(body) else 0.5)


@GENERATORS.register("rbd_revise")
def _gen_revise(req: JudgeRequest, judge: SimulatedJudge, d: _Draws) -> str:
    """Keep a flagged verdict with the profile's rates, else switch, favouring gold by competence.

    ``reasoning_use`` r makes both depend on the analysis the evaluator was shown (its
    informativeness i): a wrong verdict is kept with s + (1 - s) r (1 - i) instead of s, and
    gold's utility among the other options is competence x (1 + r i).  With r = 0 the analysis
    is not read (the label alone decides)."""
    info = _info(req)
    fmt = str(info.get("answer", "output_ab"))
    n = int(info.get("n_options", 2))
    prior = [int(v) if v is not None else -1 for v in info.get("prior", [-1])]
    gold = [int(v) for v in info.get("gold", [0])]
    us = _uniforms(d, 4 * len(prior), "revise")
    p = judge.profile
    r_use = p.reasoning_use
    inf = analysis_informativeness(req.prompt_text()) if r_use > 0 else 1.0
    keep_wrong = p.stubbornness + (1.0 - p.stubbornness) * r_use * (1.0 - inf)
    new = []
    for r, (pv, gv) in enumerate(zip(prior, gold, strict=True)):
        u_keep, u_pick = us[4 * r], us[4 * r + 1: 4 * r + 1 + n]
        if pv >= 0 and u_keep < (p.keep_correct if pv == gv else keep_wrong):
            new.append(pv)
            continue
        cands = [k for k in range(n) if k != pv]
        util = [p.competence * (1.0 + r_use * inf) * (1.0 if k == gv else 0.0) for k in cands]
        new.append(cands[_logit_choice(util, u_pick)])
    bad = _reliability(judge, d)
    if bad is not None:
        return bad
    return write_answer(fmt, new)


def _teacher_analysis(bias: str, info: dict[str, Any], req: JudgeRequest) -> str:
    chosen = info.get("chosen", [])
    opts = [req.slots[k] for k in sorted(req.slots)]
    if bias in ("verbosity", "verbosity+bandwagon") and len(opts) == 2 and chosen:
        la = length_log_ratio(opts[0], opts[1])
        longer = "a" if la > 0 else "b"
        words = [text_features(o).words for o in opts]
        pick = "ab"[chosen[0]] if chosen[0] >= 0 else "?"
        return (f"Output (a) has {words[0]} words and Output (b) has {words[1]}; Output ({longer}) is the longer one. "
                f"The judge chose Output ({pick}). I check whether the longer answer is actually correct or merely "
                f"more elaborate, comparing the final results the two outputs state.")
    if bias == "position" and len(chosen) == 2:
        same = "the same response" if chosen[0] != chosen[1] else "different responses"
        return (f"In the original order the judge chose Output ({'ab'[chosen[0]] if chosen[0] >= 0 else '?'}); after "
                f"swapping it chose Output ({'ab'[chosen[1]] if chosen[1] >= 0 else '?'}), i.e. {same} in the two "
                f"rounds. A judgement that follows the slot instead of the content changes with the order.")
    if bias == "bandwagon":
        named = info.get("statement_option", -1)
        chosen_index = chosen[0] if chosen else -1
        agree = "agrees" if chosen_index == named else "disagrees"
        return (f"The statement says most people prefer Output ({'ab'[named] if named >= 0 else '?'}); the judge's "
                f"choice {agree} with it. I compare both outputs on how precisely they follow the instruction, "
                f"independently of the majority opinion.")
    if bias == "sentiment":
        tones = [text_features(o).sentiment for o in opts]
        chosen_index = chosen[0] if chosen else -1
        tone = ("positive" if chosen_index >= 0 and tones[chosen_index] > 0.2
                else "negative" if chosen_index >= 0 and tones[chosen_index] < -0.2 else "neutral")
        return (f"The options differ in tone; the chosen option ({chosen_index + 1 if chosen_index >= 0 else '?'}) "
                f"is phrased in a {tone} tone. I set the tone aside and check which option is factually correct.")
    return "I compare the options on their content rather than on surface features."


@GENERATORS.register("rbd_detect")
def _gen_detect(req: JudgeRequest, judge: SimulatedJudge, d: _Draws) -> str:
    """A simulated bias detector: the planted label skill (recall / specificity, the same draw as
    a plain label) and an analysis of the case's cue, as the teacher writes it."""
    label = str(req.truth.get("label", "no")).lower()
    ans = label if d[0] < judge.label_skill(label) else ("no" if label == "yes" else "yes")
    if d[6] < judge.profile.malformed_rate:
        return "<think>The evaluation may or may not be biased.</think>"
    bias = str(_info(req).get("bias_type", "verbosity"))
    return f"<think>{_teacher_analysis(bias, _info(req), req)} {SIMULATED_TEXT_NOTE}</think> {ans.capitalize()}"


@GENERATORS.register("rbd_teacher")
def _gen_teacher(req: JudgeRequest, judge: SimulatedJudge, d: _Draws) -> str:
    info = _info(req)
    bias = str(info.get("bias_type", "verbosity"))
    evaluator = str(info.get("evaluator", "the evaluator"))
    label = str(req.truth.get("label", "no")).lower()
    ans = label if d[2] < judge.label_skill(label) else ("no" if label == "yes" else "yes")
    if d[6] < judge.profile.malformed_rate:
        return "<think>The evaluation may or may not be biased; I cannot decide.</think>"
    conclusion = ("The decision follows the superficial cue rather than the content, so the judgement is biased."
                  if ans == "yes" else
                  f"The decision is supported by the content, so I see no sign of {bias} bias.")
    return (
        f"<think>\nBias type: this example tests {bias} bias. "
        f"{_teacher_analysis(bias, info, req)} "
        f"Evaluator: {evaluator} is a model whose capacity affects how easily it is swayed by such cues. "
        f"{conclusion} {SIMULATED_TEXT_NOTE}\n</think>\n{ans.capitalize()}"
    )
