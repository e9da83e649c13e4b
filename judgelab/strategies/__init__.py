"""The nine debiasing strategies of paper 003 (Sec. 3.3) as registry entries.

A strategy is: the calls it makes per instance (prompt role x presentation order x
temperature, or other judges' baseline calls for the cross-family ensemble), the rule that
aggregates their verdicts into one, and hence its cost multiplier.  Adding a strategy is one
:data:`STRATEGIES` entry.

==== ======================= ========================================================= ======
name label                   calls per instance -> aggregation                          cost
==== ======================= ========================================================= ======
B0   Baseline                baseline prompt, shown as stored -> the verdict            1x
S1   Position swap           baseline prompt in both orders (BA flipped back) ->        2x
                             keep if both agree, else tie
S2   Same-family ensemble    baseline prompt at temperatures {0, 0.3, 0.7} -> majority  3x
S3   Cross-family ensemble   the judge's own B0 call plus the B0 calls of one judge     3x
                             from each of two other families -> majority
S4   Calibrated rubric       five 1-5 criteria, verdict as its own field                1x
S5   Chain of thought        step-by-step analysis before the verdict field              1x
S6   Reference-guided        a reference answer in the prompt (the dataset's, else one   1x +
                             the judge writes per question, shared by all its pairs)    1/q
S7   Combined full           CoT + rubric + reference prompt, both orders, at the S2     6x +
                             temperatures -> majority of the six                        1/q
S8   Combined budget         merged CoT + rubric prompt in both orders -> keep if both   2x
                             agree, else tie (the S1 rule)
==== ======================= ========================================================= ======

S3 and S7 are not specified beyond their names in the paper (their results are in its
Appendix B); the definitions above are ours and are documented here and in docs/studies/strategies.md.
"1/q" is one reference generation per question, amortised over the pairs that share it.

Calls are identified by ``call_id`` = role | order | temperature.  The same call used by two
strategies (S1's first order is B0's call; S3 reuses B0 calls of three judges) is one
request and therefore one cache key: it is asked once and counted once.

Aggregation rules (:data:`AGGREGATIONS`) never turn a missing verdict (an unparsed answer, a
refusal, an error) into a vote: ``swap_agree`` needs both verdicts; ``majority`` returns the
verdict held by more than half of all calls, a tie when every call answered and none has a
majority, and no verdict otherwise.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from judgelab.registry import Registry

#: Default prompt template per role (judgelab.strategies.prompts; B0's is the backbone's).
ROLE_TEMPLATES: dict[str, str] = {
    "baseline": "json_verdict",
    "rubric": "rubric5_json",
    "cot": "cot_json",
    "reference": "reference_json",
    "cot_rubric": "cot_rubric_json",
    "full": "full_json",
}
REFERENCE_ROLES = frozenset({"reference", "full"})


@dataclass(frozen=True)
class StrategySettings:
    """The configurable parts of the strategy definitions (config: strategies)."""

    temperatures: tuple[float, ...] = (0.0, 0.3, 0.7)
    cross_family_size: int = 3


@dataclass(frozen=True)
class CallSpec:
    """One call a strategy makes per instance."""

    role: str  # prompt role (a key of ROLE_TEMPLATES)
    order: str = "AB"  # AB = as stored, BA = swapped
    temperature: float | None = None  # None: the judge's own sampling temperature

    @property
    def call_id(self) -> str:
        t = "judge" if self.temperature is None else f"{self.temperature:g}"
        return f"{self.role}|{self.order}|t={t}"

    @property
    def needs_reference(self) -> bool:
        return self.role in REFERENCE_ROLES


Aggregator = Callable[[Sequence[str | None]], str | None]
AGGREGATIONS: Registry[Aggregator] = Registry("verdict aggregation rule")


@AGGREGATIONS.register("single")
def single(verdicts: Sequence[str | None]) -> str | None:
    if len(verdicts) != 1:
        raise ValueError(f"single aggregation expects one verdict, got {len(verdicts)}")
    return verdicts[0] or None


@AGGREGATIONS.register("swap_agree")
def swap_agree(verdicts: Sequence[str | None]) -> str | None:
    """Paper 003, S1/S8: keep the verdict if both orders agree (after flipping back), else tie."""
    if len(verdicts) != 2:
        raise ValueError(f"swap aggregation expects two verdicts, got {len(verdicts)}")
    a, b = verdicts
    if not a or not b:
        return None
    return a if a == b else "tie"


@AGGREGATIONS.register("majority")
def majority(verdicts: Sequence[str | None]) -> str | None:
    """Strict majority of all calls; tie if all answered without a majority; else no verdict."""
    votes = Counter(v for v in verdicts if v)
    if votes:
        top, k = votes.most_common(1)[0]
        if k * 2 > len(verdicts):
            return top
    return "tie" if sum(votes.values()) == len(verdicts) and verdicts else None


@dataclass(frozen=True)
class Strategy:
    name: str
    label: str
    mechanism: str  # single-call prompting | multi-call aggregation | combined
    description: str
    aggregation: str  # AGGREGATIONS entry
    build: Callable[[StrategySettings], tuple[CallSpec, ...]]
    cross_family: bool = False  # the calls are made by the cross-family members

    def calls(self, settings: StrategySettings) -> tuple[CallSpec, ...]:
        return self.build(settings)

    def aggregate(self, verdicts: Sequence[str | None]) -> str | None:
        return AGGREGATIONS.get(self.aggregation, where=f"strategy {self.name}")(verdicts)

    def verdict_calls(self, settings: StrategySettings) -> int:
        """Verdict calls per instance (the paper's cost multiplier)."""
        n = len(self.calls(settings))
        return n * settings.cross_family_size if self.cross_family else n

    def needs_reference(self, settings: StrategySettings) -> bool:
        return any(c.needs_reference for c in self.calls(settings))


STRATEGIES: Registry[Strategy] = Registry("debiasing strategy")


def _add(s: Strategy) -> None:
    STRATEGIES.add(s.name, s)


_add(Strategy("B0", "Baseline", "single-call prompting", "Minimal prompt requesting a JSON verdict with reasoning.",
              "single", lambda s: (CallSpec("baseline"),)))
_add(Strategy("S1", "Position swap", "multi-call aggregation",
              "Two calls with A/B order reversed; the swapped verdict is flipped back; keep if both agree, else tie.",
              "swap_agree", lambda s: (CallSpec("baseline", "AB"), CallSpec("baseline", "BA"))))
_add(Strategy("S2", "Same-family ensemble", "multi-call aggregation",
              "The baseline prompt at several temperatures (default 0, 0.3, 0.7); majority vote.",
              "majority", lambda s: tuple(CallSpec("baseline", "AB", t) for t in s.temperatures)))
_add(Strategy("S3", "Cross-family ensemble", "multi-call aggregation",
              "The judge's baseline verdict and those of judges from other model families; majority vote.",
              "majority", lambda s: (CallSpec("baseline"),), cross_family=True))
_add(Strategy("S4", "Calibrated rubric", "single-call prompting",
              "Five criteria (accuracy, relevance, completeness, clarity, reasoning depth) scored 1-5; "
              "the verdict is a separate field.", "single", lambda s: (CallSpec("rubric"),)))
_add(Strategy("S5", "Chain of thought", "single-call prompting",
              "Explicit step-by-step analysis before the verdict field.", "single", lambda s: (CallSpec("cot"),)))
_add(Strategy("S6", "Reference-guided", "single-call prompting",
              "A reference answer in the prompt: the dataset's where it has one, else written by the judge "
              "once per question.", "single", lambda s: (CallSpec("reference"),)))
_add(Strategy("S7", "Combined full", "combined",
              "CoT + rubric + reference prompt in both orders at each ensemble temperature; majority vote.",
              "majority", lambda s: tuple(CallSpec("full", o, t) for t in s.temperatures for o in ("AB", "BA"))))
_add(Strategy("S8", "Combined budget", "combined",
              "One merged CoT + rubric prompt, called twice with positions swapped; tie on disagreement (S1 rule).",
              "swap_agree", lambda s: (CallSpec("cot_rubric", "AB"), CallSpec("cot_rubric", "BA"))))

STRATEGY_ORDER = ("B0", "S1", "S2", "S3", "S4", "S5", "S6", "S7", "S8")


def bounded_by_baseline(strategy: Strategy, settings: StrategySettings | None = None) -> bool:
    """Whether ``strategy`` can be right only where B0 is, on gold without ties, by construction.

    A ``swap_agree`` strategy whose calls include B0's own call keeps B0's verdict when the
    swapped order agrees and answers "tie" otherwise; a tie is wrong against tie-free gold, so
    every instance it gets right B0 got right too (McNemar's ``c`` is 0 by construction).  Its
    comparison with B0 then measures how often B0's verdict flips with the order, not a cost of
    the strategy (paper 003's S1).  S8 shares the rule but not the call, so it is a real test."""
    settings = settings or StrategySettings()
    base = STRATEGIES.get("B0").calls(settings)
    return (strategy.aggregation == "swap_agree" and not strategy.cross_family and len(base) == 1
            and base[0] in strategy.calls(settings))


def get_strategies(names: Sequence[str], *, where: str = "config: strategies/strategies") -> list[Strategy]:
    """Look the names up (unknown names raise, listing the known ones); B0 must be present."""
    out = [STRATEGIES.get(n, where=where) for n in names]
    if "B0" not in names:
        from judgelab.config import ConfigError

        raise ConfigError(f"{where}: B0 (the baseline every comparison is made against) must be included")
    return out


def strategy_table(settings: StrategySettings, names: Sequence[str] = STRATEGY_ORDER) -> list[dict]:
    """One row per strategy: label, mechanism, calls, aggregation, cost multiplier."""
    rows = []
    for n in names:
        s = STRATEGIES.get(n)
        rows.append({
            "strategy": s.name, "label": s.label, "mechanism": s.mechanism, "aggregation": s.aggregation,
            "calls": ";".join(c.call_id for c in s.calls(settings)), "cross_family": s.cross_family,
            "verdict_calls": s.verdict_calls(settings), "reference_per_question": s.needs_reference(settings),
            "description": s.description,
        })
    return rows


# The strategies' prompt templates register themselves in judgelab.prompts.PAIRWISE_TEMPLATES.
from judgelab.strategies import prompts as _prompts  # noqa: E402,F401
