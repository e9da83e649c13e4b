"""The simulated judge panel: seeded judges with planted, configurable biases.

Why it exists: it makes the whole DAG run on a laptop, and it is the ground truth
the tests check estimators against (a bias planted here must be recovered there).
Every answer it gives is synthetic and every table made from it says so.

How a simulated judge decides a pairwise comparison.  It reads the two candidate
texts it is shown (``request.slots``) and the prompt, computes surface cues with
:mod:`judgelab.datasets.features`, and forms a preference logit for slot A::

    z = competence * (q_A - q_B)            # q from request.truth (gold or quality)
      + c_pos                               # slot A is shown first
      + c_verb  * log2(len_A / len_B)       # verbosity
      + c_md    * (md_A - md_B)             # markdown style
      + c_sent  * (sent_A - sent_B)         # sentiment / tone
      + c_self  * (own_A - own_B)           # resemblance to the judge family's own answers
      + c_band  * share * (+1 if the majority statement names A else -1)

and answers with an ordered logit with tie margin delta: with item noise
eps ~ Logistic(0, 1) seeded from the request, the verdict is A if
z + eps > delta, B if z + eps < -delta, tie otherwise.  So on a pair whose only
difference is one cue, P(A) - P(B) = sigma(c - delta) - sigma(-c - delta)
exactly: that is the signed bias score ``b`` of paper 003.  Biases are configured
*as such b-scores on reference contrasts* (:data:`REFERENCE_CONTRASTS`), the form the
papers publish them in, and converted to the coefficients c by
:func:`coefficient_for_bias`.  Temperature adds a second, per-sample logistic noise
of scale ``temperature * sample_noise``, so an ensemble at temperatures
{0, 0.3, 0.7} disagrees a little, as real ones do.

Scores (1-5) follow a latent ``true score + leniency`` pulled toward the
reference answer's score by ``reference_anchor``, shifted and blurred by rubric
order and score-ID effects, plus Gaussian noise, of which a reference answer with
score k removes the share ``reference_information[k]`` (it carries information); yes/no labels are right with
probability ``label_accuracy`` (or ``label_recall`` / ``label_specificity`` for yes / no
truths).  Every answer is written in the raw format the
prompt asks for (JSON verdict, ``[[A]]``, ``A``, ``Output (a)``,
``Feedback: ... [RESULT] iv``, ``<think>...</think> Yes``), with planted rates of
refusals and malformed answers, so the parser is exercised as with real judges.

Free text is written by generation tasks (``truth["gen"]["task"]``, :data:`GENERATORS`).  The
plain ones are here; what one study needs the world to write lives in :mod:`judgelab.simworld`
and is found, like prompt styles (:data:`PROMPT_STYLES`), through the entry-point group
``judgelab.simulated_tasks`` (:func:`load_simulated_tasks`) -- the extension point through which
a package of one's own registers a simulated writer task too.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import math
import re
import struct
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, fields
from functools import lru_cache
from statistics import NormalDist
from types import EllipsisType
from typing import Any, TypeVar

from judgelab.config import REPO_ROOT, ConfigError, JudgeSpec
from judgelab.datasets.features import (
    FAMILY_SIGNATURES,
    bandwagon_cue,
    bow_cosine,
    family_signature_score,
    length_log_ratio,
    text_features,
)
from judgelab.judges import BACKENDS
from judgelab.judges.base import Judge
from judgelab.parsing import SCORE_IDS, score_id
from judgelab.records import JudgeRequest, Message, OutputKind, RawAnswer
from judgelab.registry import Registry, UnknownEntryError

T = TypeVar("T")

#: The contrast on which each configured bias score b is defined (cue difference A - B).
#: position: slot A vs B of identical texts; verbosity: a 2.8x longer text (paper 003's
#: expansion ratio); markdown: fully formatted vs plain prose; sentiment: positive vs
#: negative tone (sentiment cue +0.75 vs -0.75); self_preference: all of the judge
#: family's signature cues vs none; bandwagon: "90% of people believe A is better".
REFERENCE_CONTRASTS: dict[str, float] = {
    "position": 1.0,
    "verbosity": math.log2(2.8),
    "markdown": 1.0,
    "sentiment": 1.5,
    "self_preference": 1.0,
    "bandwagon": 0.9,
}
BIAS_NAMES = tuple(REFERENCE_CONTRASTS)


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def bias_score(coef_times_cue: float, tie_margin: float) -> float:
    """P(prefers target) - P(prefers other) for a logit shift on an otherwise tied pair."""
    return _sigmoid(coef_times_cue - tie_margin) - _sigmoid(-coef_times_cue - tie_margin)


def pairwise_probs(z: float, tie_margin: float) -> tuple[float, float, float]:
    """(P(A), P(tie), P(B)) of the ordered logit at preference logit ``z``."""
    pa = _sigmoid(z - tie_margin)
    pb = _sigmoid(-z - tie_margin)
    return pa, 1.0 - pa - pb, pb


def coefficient_for_bias(b: float, tie_margin: float, contrast: float) -> float:
    """Invert :func:`bias_score`: the per-unit-cue logit coefficient giving score ``b``.

    The score has a closed form, ``bias_score(x, d) = sinh x / (cosh x + cosh d)`` (multiply
    both sigmoids out over ``e^x e^d``), and so has its inverse: writing
    ``sinh x - b cosh x = sqrt(1 - b^2) sinh(x - atanh b)`` gives
    ``x = atanh b + asinh(b cosh d / sqrt(1 - b^2))``.  Solved this way rather than by a root
    finder: it is the exact root (a residual of about 1e-16 where ``brentq`` stopped within
    1e-12), and a job that builds a simulated judge need not import ``scipy.optimize`` (about
    0.35 CPU-s, in some hundred jobs of the default DAG)."""
    if not -1.0 < b < 1.0:
        raise ValueError(f"a bias score must lie strictly in (-1, 1), got {b}")
    if b == 0.0:
        return 0.0
    a = abs(b)
    x = math.atanh(a) + math.asinh(a * math.cosh(tie_margin) / math.sqrt((1.0 - a) * (1.0 + a)))
    return math.copysign(x, b) / contrast


@dataclass(frozen=True)
class OrderEffect:
    shift: float = 0.0  # added to the latent score
    noise: float = 0.0  # extra Gaussian sd


@dataclass(frozen=True)
class StyleEffect:
    """A judge's pairwise behaviour under one recognised prompt style (see :data:`PROMPT_STYLES`).

    Debiasing prompts change how a judge weighs cues (paper 003: chain of thought lowers the
    style bias, a merged CoT+rubric prompt raises agreement).  ``biases`` replaces the judge's
    own b-scores for the biases listed (same reference contrasts); ``competence_delta`` is
    added to its competence; ``tie_margin`` replaces its tie margin when set.
    """

    competence_delta: float = 0.0
    tie_margin: float | None = None
    biases: dict[str, float] = field(default_factory=dict)


def _style_effects(raw: Any, *, where: str) -> dict[str, StyleEffect]:
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: prompt_styles must be a mapping of style name -> effect")
    out = {}
    known = {f.name for f in fields(StyleEffect)}
    for name, eff in raw.items():
        w = f"{where}: prompt_styles/{name}"
        if name not in PROMPT_STYLES:
            raise ConfigError(f"{w}: unknown prompt style; known: {', '.join(PROMPT_STYLES.names()) or '(none)'}")
        eff = dict(eff or {})
        if set(eff) - known:
            raise ConfigError(f"{w}: unknown key(s) {sorted(set(eff) - known)}; known: {sorted(known)}")
        biases = {k: float(v) for k, v in (eff.pop("biases", None) or {}).items()}
        for k, v in biases.items():
            if k not in BIAS_NAMES:
                raise ConfigError(f"{w}: unknown bias {k!r}; known: {list(BIAS_NAMES)}")
            if not -1.0 < v < 1.0:
                raise ConfigError(f"{w}: bias {k!r} = {v} must lie strictly in (-1, 1)")
        out[str(name)] = StyleEffect(biases=biases, **eff)
    return out


def _reference_information(raw: Any, *, where: str) -> dict[int, float]:
    """``reference_information``: reference score 1..5 -> share of noise variance removed, in [0, 1)."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: reference_information must map a reference score 1..5 to a share in [0, 1)")
    out = {}
    for k, v in raw.items():
        try:
            score, share = int(k), float(v)
        except (TypeError, ValueError):
            raise ConfigError(f"{where}: reference_information {k!r}: {v!r} is not score -> number") from None
        if score not in range(1, 6) or not 0.0 <= share < 1.0:
            raise ConfigError(f"{where}: reference_information {k!r}: {v!r}; scores are 1..5, shares in [0, 1)")
        out[score] = share
    return out


@dataclass(frozen=True)
class SimProfile:
    """A simulated judge's planted behaviour (see module docstring)."""

    competence: float = 2.5
    tie_margin: float = 0.4
    sample_noise: float = 1.0
    biases: dict[str, float] = field(default_factory=dict)  # b-scores on REFERENCE_CONTRASTS
    # behaviour under recognised debiasing prompts (paper 003; StyleEffect, PROMPT_STYLES);
    # empty = the same behaviour under every prompt
    prompt_styles: dict[str, StyleEffect] = field(default_factory=dict)
    # scoring (1-5)
    score_competence: float = 1.0  # weight of the true score in the latent score
    leniency: float = 0.0  # constant shift of the latent score
    score_noise: float = 0.6
    reference_anchor: float = 0.0  # 0..1 pull toward the reference answer's score
    # what a reference answer tells the judge (paper 004, Fig. 5: the higher the reference's
    # score, the better the scoring accuracy): reference score -> share 0..1 of the score-noise
    # variance it removes (a yardstick to grade against); scores not listed remove none
    reference_information: dict[int, float] = field(default_factory=dict)
    rubric_order: dict[str, OrderEffect] = field(default_factory=dict)  # descending, random
    score_id_effects: dict[str, OrderEffect] = field(default_factory=dict)  # letter, roman
    # labels and reliability
    label_accuracy: float = 0.8
    refusal_rate: float = 0.0
    malformed_rate: float = 0.0
    # bias detection (paper 001): P(yes | truth yes) and P(no | truth no) of yes/no labels;
    # None falls back to label_accuracy (a symmetric detector)
    label_recall: float | None = None
    label_specificity: float | None = None
    # revising a verdict flagged as biased by a detector (paper 001, Fig. 10; used by the
    # study's writers in judgelab/simworld/rbd.py): the probability of keeping a flagged
    # verdict that is wrong (refusing a warranted correction) and one that is right
    stubbornness: float = 0.0
    keep_correct: float = 1.0
    # how much the revision reads the detector's analysis (0..1; paper 001's claim that the
    # detector's reasoning, not only its label, helps the evaluator): with an empty or
    # content-free analysis a flagged wrong verdict is kept more often and a switch among several
    # options favours gold less (judgelab/simworld/rbd.py, analysis_informativeness)
    reasoning_use: float = 0.0
    # simulated decoding time per output token, so latency/throughput tables have a value
    seconds_per_output_token: float = 0.0

    @classmethod
    def from_options(cls, options: dict[str, Any], *, where: str) -> SimProfile:
        raw = dict(options.get("profile") or {})
        known = {f.name for f in fields(cls)}
        unknown = set(raw) - known
        if unknown:
            raise ConfigError(f"{where}: unknown simulated-profile key(s) {sorted(unknown)}; known: {sorted(known)}")
        biases = dict(raw.pop("biases", None) or {})
        bad = set(biases) - set(BIAS_NAMES)
        if bad:
            raise ConfigError(f"{where}: unknown bias(es) {sorted(bad)}; known: {list(BIAS_NAMES)}")
        for k, v in biases.items():
            if not -1.0 < float(v) < 1.0:
                raise ConfigError(f"{where}: bias {k!r} = {v} must lie strictly in (-1, 1)")
        for k in ("rubric_order", "score_id_effects"):
            raw[k] = {name: OrderEffect(**eff) for name, eff in (raw.get(k) or {}).items()}
        if "reference_information" in raw:
            raw["reference_information"] = _reference_information(raw["reference_information"], where=where)
        if "prompt_styles" in raw:
            raw["prompt_styles"] = _style_effects(raw["prompt_styles"], where=where)
        return cls(biases={k: float(v) for k, v in biases.items()}, **raw)

    def coefficients(self) -> dict[str, float]:
        return {
            name: coefficient_for_bias(self.biases.get(name, 0.0), self.tie_margin, contrast)
            for name, contrast in REFERENCE_CONTRASTS.items()
        }


# ---------------------------------------------------------------------------------
# deterministic randomness from the request


#: a digest's first 32 bytes as eight little-endian 32-bit words
_EIGHT_WORDS = struct.Struct("<8I").unpack


def _feed_prompt(h: Any, messages: Sequence[Message]) -> int:
    """Feed ``h`` the UTF-8 of the prompt (:meth:`JudgeRequest.prompt_text`: the messages' texts
    joined by blank lines) part by part, without joining them: the same bytes, as UTF-8 encodes a
    text piece by piece; each message's UTF-8 is made once (:attr:`Message.content_utf8`), and a
    plan asks the same messages of many judges.  Returns the prompt's length in characters."""
    chars = -2
    for m in messages:
        if chars >= 0:
            h.update(b"\n\n")
        h.update(m.content_utf8)
        chars += len(m.content) + 2
    return chars


class _Draws:
    """Uniforms derived from a hash: the same request always draws the same numbers."""

    __slots__ = ("_words",)

    def __init__(self, digest: bytes) -> None:
        # the words as drawn; each uniform is made when read (a pairwise answer reads three of eight)
        self._words = _EIGHT_WORDS(digest[:32])

    def __getitem__(self, i: int) -> float:
        return (self._words[i] + 0.5) / 4294967296.0


def _logistic(u: float) -> float:
    return math.log(u / (1.0 - u))


_NORMAL = NormalDist()

# ---------------------------------------------------------------------------------
# answer writers (the raw formats real judges use)

_TIE_FORMATS = {"json", "brackets", "labelled"}


#: :func:`_reasoning`'s sentences by what they depend on: the side of each cue past its threshold,
#: and the verdict (27 texts at most; a plan's stand-ins write one per pairwise answer)
_REASONING: dict[tuple[int, int, str], str] = {}


def _side(cue: float) -> int:
    """+1 / -1 where a cue's size passes :func:`_reasoning`'s threshold (0.3) toward A / B, else 0."""
    return 1 if cue > 0.3 else (-1 if cue < -0.3 else 0)


def _reasoning(cues: dict[str, float], verdict: str) -> str:
    """The one-line reasoning of a pairwise answer (:func:`_write_reasoning`), once per distinct text."""
    key = (_side(cues.get("len", 0.0)), _side(cues.get("md", 0.0)), verdict)
    text = _REASONING.get(key)
    if text is None:
        text = _REASONING[key] = _write_reasoning(cues, verdict)
    return text


def _write_reasoning(cues: dict[str, float], verdict: str) -> str:
    parts = []
    if abs(cues.get("len", 0.0)) > 0.3:
        parts.append(f"Response {'A' if cues['len'] > 0 else 'B'} is more detailed")
    if abs(cues.get("md", 0.0)) > 0.3:
        parts.append(f"Response {'A' if cues['md'] > 0 else 'B'} is better organised")
    if not parts:
        parts.append("Both responses address the question")
    tail = "they are of equal quality" if verdict == "tie" else f"Response {verdict} is better overall"
    return "; ".join(parts) + f"; {tail}."


#: :func:`_write_pairwise`'s answers by (format, verdict, reasoning): a few hundred texts at most
#: (:data:`_REASONING`'s sentences, three verdicts, five formats), one string object each, so the
#: answers a plan's stand-ins write by the hundred thousand share it (its hash, made once, is what
#: the verdict parser's cache reads for each answer)
_PAIRWISE_TEXT: dict[tuple[str, str, str], str] = {}
_PAIRWISE_TEXT_MAX = 4096


def _write_pairwise(fmt: str, verdict: str, reasoning: str) -> str:
    key = (fmt, verdict, reasoning)
    text = _PAIRWISE_TEXT.get(key)
    if text is None:
        if len(_PAIRWISE_TEXT) >= _PAIRWISE_TEXT_MAX:
            _PAIRWISE_TEXT.clear()
        text = _PAIRWISE_TEXT[key] = _format_pairwise(fmt, verdict, reasoning)
    return text


def _format_pairwise(fmt: str, verdict: str, reasoning: str) -> str:
    if fmt == "json":
        v = "tie" if verdict == "tie" else verdict
        return '{"reasoning": "' + reasoning + '", "verdict": "' + v + '"}'
    if fmt == "brackets":
        return f"{reasoning}\n\n[[{'C' if verdict == 'tie' else verdict}]]"
    if fmt == "output_ab":
        return f"Output ({verdict.lower()})"
    if fmt == "labelled":
        return f"{reasoning}\nVerdict: {verdict}"
    return verdict  # "letter"


def _malformed_pairwise(fmt: str, u: float, reasoning: str) -> str:
    """Three real failure modes: prose only, two conflicting verdicts, truncated JSON."""
    if u < 1 / 3:
        return "Both responses have strengths and weaknesses, and it is hard to choose between them."
    if u < 2 / 3 and fmt == "json":
        return '{"verdict": "A", "reasoning": "first look"}\nOn reflection:\n{"verdict": "B", "reasoning": "' + reasoning + '"}'
    return '{"reasoning": "' + reasoning[: max(5, len(reasoning) // 2)]


REFUSAL_TEXT = "I'm sorry, but I can't help with evaluating these responses."

# ---------------------------------------------------------------------------------
# free-text generation: a deterministic template writer, labelled as such

GeneratorFn = Callable[[JudgeRequest, "SimulatedJudge", _Draws], str]


@dataclass(frozen=True)
class PromptStyle:
    """A pairwise prompt style the simulated judge recognises by a marker phrase in the prompt.

    ``writer(fmt, verdict, reasoning, draws)`` returns the raw answer in the layout that style
    asks for (criterion scores, step-by-step analysis before the JSON); None keeps the plain
    writer.  A prompt containing several markers has the style with the longest marker.
    Studies register styles from their :mod:`judgelab.simworld` module (:func:`load_simulated_tasks`).
    """

    marker: str
    writer: Callable[[str, str, str, _Draws], str] | None = None


#: Entry-point group through which packages register simulated writer tasks and prompt styles.
ENTRY_POINT_GROUP = "judgelab.simulated_tasks"
_tasks_loaded = False


def load_simulated_tasks() -> None:
    """Import every module registered in the entry-point group :data:`ENTRY_POINT_GROUP`, once.

    Why entry points: the study-specific parts of the simulated world (judgelab's own in
    :mod:`judgelab.simworld`, one entry per module in ``pyproject.toml``) register their writer
    tasks (``@GENERATORS.register("task")``) and prompt styles (``PROMPT_STYLES.add``) when
    imported, and this backbone module must not name them (imports run downward).  It is also
    the extension point for users: a package of one's own that declares, in its
    ``pyproject.toml``::

        [project.entry-points."judgelab.simulated_tasks"]
        mytask = "mypackage.simtasks"

    gets ``mypackage.simtasks`` imported here, so a request with ``truth["gen"]["task"] ==
    "mytask"`` is written by the function that module registers.  Called lazily by the two
    registries below the first time they are asked for something (not at import, so the
    plugin modules can import this one).
    """
    global _tasks_loaded
    if _tasks_loaded:
        return
    _tasks_loaded = True  # set first: the plugin modules import this module
    for ep in declared_simulated_tasks():
        try:
            ep.load()
        except Exception as err:
            _tasks_loaded = False  # fail again next time rather than run half-loaded
            raise ImportError(f"simulated task plugin {ep.name!r} = {ep.value!r} (entry-point group "
                              f"{ENTRY_POINT_GROUP!r}) failed to import: {err}") from err


def declared_simulated_tasks() -> list[importlib.metadata.EntryPoint]:
    """The entry points of :data:`ENTRY_POINT_GROUP`: installed packages' and this checkout's own.

    Installed metadata alone is not enough: rule scripts run in per-rule conda environments
    where judgelab is not installed but imported from the checkout (``workflow_scripts/_repo.py``),
    and an editable install made before an entry was added has stale metadata.  So the group as
    this checkout's ``pyproject.toml`` declares it is added (same name and module: one entry).
    """
    eps = {(ep.name, ep.value): ep for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}
    pyproject = REPO_ROOT / "pyproject.toml"
    if pyproject.is_file():
        import tomllib  # Python 3.11+, as snakemake >= 8 (a dependency) requires

        project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
        if project.get("name") == "judgelab":
            for name, value in project.get("entry-points", {}).get(ENTRY_POINT_GROUP, {}).items():
                eps.setdefault((name, value), importlib.metadata.EntryPoint(name, value, ENTRY_POINT_GROUP))
    return sorted(eps.values(), key=lambda e: (e.name, e.value))


class _PluginRegistry(Registry[T]):
    """A registry completed by :func:`load_simulated_tasks` before anything is read from it."""

    def get(self, name: str, *, where: str = "") -> T:
        load_simulated_tasks()
        try:
            return super().get(name, where=where)
        except UnknownEntryError as err:
            raise UnknownEntryError(f"{err} (after loading the entry-point group {ENTRY_POINT_GROUP!r}, "
                                    f"where a package registers its own)") from None

    def __contains__(self, name: object) -> bool:
        load_simulated_tasks()
        return super().__contains__(name)

    def __iter__(self) -> Iterator[str]:
        load_simulated_tasks()
        return super().__iter__()

    def names(self) -> list[str]:
        load_simulated_tasks()
        return super().names()


PROMPT_STYLES: Registry[PromptStyle] = _PluginRegistry("simulated prompt style")
GENERATORS: Registry[GeneratorFn] = _PluginRegistry("simulated generation task")
SIMULATED_TEXT_NOTE = "[simulated text]"

_FILLERS = (
    "It is worth noting that this point matters in practice.",
    "This is an important consideration to keep in mind.",
    "In other words, the same idea can be restated for clarity.",
    "Many people find this aspect especially relevant.",
    "This detail is often overlooked but deserves attention.",
)


def _topic_words(prompt: str, n: int = 6) -> list[str]:
    words = [w for w in re.findall(r"[A-Za-z][A-Za-z\-]{3,}", prompt)]
    seen: dict[str, None] = {}
    for w in words:
        seen.setdefault(w.lower(), None)
    return list(seen)[:n] or ["the", "question"]


@GENERATORS.register("answer")
def _gen_answer(req: JudgeRequest, judge: SimulatedJudge, d: _Draws) -> str:
    gen = req.truth.get("gen", {})
    topic = _topic_words(req.messages[-1].content)
    sig = FAMILY_SIGNATURES.get(judge.spec.family, ("Here is an answer.", "That is all."))
    n = int(gen.get("sentences", 4))
    body = " ".join(
        f"Point {i + 1}: {topic[(i + int(d[0] * 7)) % len(topic)]} relates to {topic[(i + 1) % len(topic)]}."
        for i in range(n)
    )
    return f"{sig[0]} {body} {sig[1]} {SIMULATED_TEXT_NOTE}"


@GENERATORS.register("expand")
def _gen_expand(req: JudgeRequest, judge: SimulatedJudge, d: _Draws) -> str:
    gen = req.truth.get("gen", {})
    source = str(gen.get("source", req.messages[-1].content))
    sentences = re.split(r"(?<=[.!?])\s+", source.strip())
    out = []
    for i, s in enumerate(sentences):
        out.append(s)
        out.append(_FILLERS[(i + int(d[1] * 5)) % len(_FILLERS)])
        out.append(_FILLERS[(i + 2 + int(d[1] * 5)) % len(_FILLERS)])
    return " ".join(out)


@GENERATORS.register("reasoning")
def _gen_reasoning(req: JudgeRequest, judge: SimulatedJudge, d: _Draws) -> str:
    label = str(req.truth.get("label", "no")).lower()
    correct = d[2] < judge.profile.label_accuracy
    answer = label if correct else ("no" if label == "yes" else "yes")
    return f"<think>I compare the evaluation with the options and look for signs of bias. {SIMULATED_TEXT_NOTE}</think> {answer.capitalize()}"


# ---------------------------------------------------------------------------------


@BACKENDS.register("simulated")
class SimulatedJudge(Judge):
    simulated = True
    reads_truth = True
    batch_size = 4096

    def __init__(self, spec: JudgeSpec) -> None:
        super().__init__(spec)
        self.profile = SimProfile.from_options(spec.options, where=f"judge {spec.name!r} options")
        self.coef = self.profile.coefficients()
        self._style_params: dict[str | None, tuple[dict[str, float], float, float]] = {
            None: (self.coef, self.profile.competence, self.profile.tie_margin)
        }
        self._salt = (spec.name + "|" + str(spec.sampling.get("seed", 0))).encode()

    def identity_extra(self) -> dict[str, Any]:
        return {"name": self.spec.name, "family": self.spec.family, "options": self.spec.options}

    # -- entry point ----------------------------------------------------------------
    def answer(self, requests: Sequence[JudgeRequest]) -> list[RawAnswer]:
        out = []
        markers = self._markers()
        shared = _shared_cues_memo()
        salt = self._salt[:64]
        keyed = hashlib.blake2b(key=salt, digest_size=32)  # copied per request: the key block is hashed once
        default_temp = self.spec.sampling.get("temperature", 0.0)
        refusal_rate, per_token = self.profile.refusal_rate, self.profile.seconds_per_output_token
        for req in requests:
            temp = float(req.params.get("temperature", default_temp))
            if req.kind is OutputKind.PAIRWISE and temp <= 0:
                # the common case, a verdict at temperature 0: what the prompt tells every judge
                # alike is read once per prompt (_SharedCues), and the prompt is hashed part by part
                # rather than joined (the same bytes: blake2b of their concatenation)
                h = keyed.copy()
                chars = _feed_prompt(h, req.messages)
                d = _Draws(h.digest())
                if d[5] < refusal_rate:
                    text = REFUSAL_TEXT
                else:
                    text = self._pairwise_shared(req, _shared_cues(req, shared, markers), d, None, temp)
                n_out = len(text) // 4 + 1
                out.append(RawAnswer(text, chars // 4 + 1, n_out, n_out * per_token))
                continue
            prompt = req.prompt_text()
            # the draws: blake2b of the prompt's UTF-8 (d) and of "temperature|params" before it (d2),
            # fed part by part (:func:`_feed_prompt`)
            h = keyed.copy()
            _feed_prompt(h, req.messages)
            d = _Draws(h.digest())
            if temp > 0:  # per-sample noise: same item, different temperature -> new draw
                h = keyed.copy()
                h.update(f"{temp}|{req.params}".encode())
                _feed_prompt(h, req.messages)
                d2: _Draws | None = _Draws(h.digest())
            else:
                d2 = None
            if d[5] < self.profile.refusal_rate and req.kind is not OutputKind.TEXT:
                text = REFUSAL_TEXT
            elif req.kind is OutputKind.PAIRWISE:  # (the shared cues are the prompt's, as _pairwise reads them)
                text = self._pairwise_shared(req, _shared_cues(req, shared, markers), d, d2, temp)
            elif req.kind is OutputKind.SCORE:
                text = self._score(req, prompt, d, d2, temp)
            elif req.kind is OutputKind.LABEL:
                text = self._label(req, d)
            else:
                task = str(req.truth.get("gen", {}).get("task", "answer"))
                text = GENERATORS.get(task, where=f"judge {self.name!r}")(req, self, d)
            n_out = len(text) // 4 + 1
            out.append(RawAnswer(text=text, tokens_in=len(prompt) // 4 + 1, tokens_out=n_out,
                                 latency_s=n_out * self.profile.seconds_per_output_token))
        return out

    # -- pairwise ----------------------------------------------------------------------
    @staticmethod
    def _markers() -> list[tuple[str, str]]:
        """(name, marker) of each registered prompt style, read once per batch of answers."""
        return [(name, PROMPT_STYLES.get(name).marker) for name in PROMPT_STYLES]

    def prompt_style(self, prompt: str) -> str | None:
        """The registered prompt style of ``prompt`` (longest matching marker), or None."""
        return _style_of(prompt, self._markers())

    def decision_params(self, prompt: str, *,
                        style: str | EllipsisType | None = ...) -> tuple[dict[str, float], float, float]:
        """(bias coefficients, competence, tie margin) this judge uses for ``prompt``
        (``style``: the prompt's style when the caller has it, :meth:`prompt_style`)."""
        if style is ...:
            style = self.prompt_style(prompt)
        key = style if isinstance(style, str) and style in self.profile.prompt_styles else None
        if key is not None and key not in self._style_params:  # None (no style) is set up in __init__
            eff = self.profile.prompt_styles[key]
            margin = self.profile.tie_margin if eff.tie_margin is None else eff.tie_margin
            biases = {**self.profile.biases, **eff.biases}
            coef = {name: coefficient_for_bias(biases.get(name, 0.0), margin, contrast)
                    for name, contrast in REFERENCE_CONTRASTS.items()}
            self._style_params[key] = (coef, self.profile.competence + eff.competence_delta, margin)
        return self._style_params[key]

    def preference_logit(self, req: JudgeRequest, prompt: str, *,
                         style: str | EllipsisType | None = ...) -> tuple[float, dict[str, float]]:
        """The deterministic part of the preference for slot A, and the cues it read."""
        if style is ...:
            style = self.prompt_style(prompt)
        return self._logit(req, _read_shared_cues(req, prompt, style))

    def _logit(self, req: JudgeRequest, shared: _SharedCues) -> tuple[float, dict[str, float]]:
        """:meth:`preference_logit` from what the prompt tells every judge alike (``shared``)."""
        a, b = req.slots.get("A", ""), req.slots.get("B", "")
        c, competence, _ = self.decision_params("", style=shared.style)
        family = self.spec.family
        own = req.truth.get("own_answers", {}).get(family) if req.truth else None
        cues = {
            "len": shared.len,
            "md": shared.md,
            "sent": shared.sent,
            "own": _own_similarity(a, family, own) - _own_similarity(b, family, own),
        }
        z = c["position"] + c["verbosity"] * cues["len"] + c["markdown"] * cues["md"]
        z += c["sentiment"] * cues["sent"] + c["self_preference"] * cues["own"]
        if shared.bandwagon is not None:
            cue = shared.bandwagon
            z += c["bandwagon"] * cue[1] * (1.0 if cue[0] == "A" else -1.0)
        z += competence * _quality_gap(req.truth)
        return z, cues

    def sample_probabilities(self, req: JudgeRequest) -> tuple[float, float, float]:
        """(P(A), P(tie), P(B)) of one more sample of this pairwise request at its temperature.

        The request's item noise (drawn from the prompt) is fixed, so what varies between samples
        is only the per-sample noise ``temperature * sample_noise * Logistic``: the exact planted
        truth a repeated-sampling estimate (paper 002's temperature-1 flip rate) must recover.
        At temperature 0 (or no sample noise) the answer is deterministic: one probability is 1."""
        prompt = req.prompt_text()
        style = _style_of(prompt, self._markers())
        z, _ = self.preference_logit(req, prompt, style=style)
        margin = self.decision_params(prompt, style=style)[2] if req.fmt in _TIE_FORMATS else 0.0
        d = _Draws(hashlib.blake2b(prompt.encode(), key=self._salt[:64], digest_size=32).digest())
        x = z + _logistic(d[0])
        scale = float(req.params.get("temperature", self.spec.sampling.get("temperature", 0.0))) \
            * self.profile.sample_noise
        if scale <= 0:
            v = "A" if x > margin else ("B" if x < -margin else "tie")
            return float(v == "A"), float(v == "tie"), float(v == "B")
        return pairwise_probs(x / scale, margin / scale)

    def _pairwise(self, req: JudgeRequest, prompt: str, d: _Draws, d2: _Draws | None, temp: float, *,
                  style: str | None) -> str:
        return self._pairwise_shared(req, _read_shared_cues(req, prompt, style), d, d2, temp)

    def _pairwise_shared(self, req: JudgeRequest, shared: _SharedCues, d: _Draws, d2: _Draws | None,
                         temp: float) -> str:
        z, cues = self._logit(req, shared)
        margin = self.decision_params("", style=shared.style)[2] if req.fmt in _TIE_FORMATS else 0.0
        noisy = z + _logistic(d[0])
        if d2 is not None:
            noisy += temp * self.profile.sample_noise * _logistic(d2[0])
        verdict = "A" if noisy > margin else ("B" if noisy < -margin else "tie")
        reasoning = _reasoning(cues, verdict)
        if d[6] < self.profile.malformed_rate:
            return _malformed_pairwise(req.fmt, d[7], reasoning)
        writer = shared.writer
        if writer is not None:
            return writer(req.fmt, verdict, reasoning, d)
        return _write_pairwise(req.fmt, verdict, reasoning)

    # -- scores -----------------------------------------------------------------------
    def latent_score(self, req: JudgeRequest, prompt: str) -> tuple[float, float]:
        """Mean and sd of the latent 1-5 score this judge gives for this prompt."""
        p = self.profile
        true = float(req.truth.get("score", 3.0))
        mean = 3.0 + p.score_competence * (true - 3.0) + p.leniency
        sd = p.score_noise
        ref = _reference_score(prompt, req.score_ids)
        if ref is not None:
            mean = (1.0 - p.reference_anchor) * mean + p.reference_anchor * ref
            # an informative reference is a yardstick: it removes part of the judgment noise
            sd *= math.sqrt(1.0 - p.reference_information.get(ref, 0.0))
        order = _rubric_order(prompt, req.score_ids)
        if order in p.rubric_order:
            mean += p.rubric_order[order].shift
            sd = math.hypot(sd, p.rubric_order[order].noise)
        if req.score_ids in p.score_id_effects:
            eff = p.score_id_effects[req.score_ids]
            mean += eff.shift
            sd = math.hypot(sd, eff.noise)
        return mean, sd

    def _score(self, req: JudgeRequest, prompt: str, d: _Draws, d2: _Draws | None, temp: float) -> str:
        mean, sd = self.latent_score(req, prompt)
        x = mean + sd * _NORMAL.inv_cdf(d[0])
        if d2 is not None:
            x += temp * self.profile.sample_noise * 0.5 * _NORMAL.inv_cdf(d2[0])
        s = min(5, max(1, math.floor(x + 0.5)))
        sid = score_id(s, req.score_ids)
        if d[6] < self.profile.malformed_rate:
            return "Feedback: The response is adequate in places. [RESULT] " + ("6" if d[7] < 0.5 else "")
        return f"Feedback: The response meets the level described for this score. [RESULT] {sid}"

    # -- labels -----------------------------------------------------------------------
    def label_skill(self, label: str) -> float:
        """P(answering ``label`` correctly): recall for yes, specificity for no, else label_accuracy."""
        p = self.profile
        if label == "yes" and p.label_recall is not None:
            return p.label_recall
        if label == "no" and p.label_specificity is not None:
            return p.label_specificity
        return p.label_accuracy

    def _label(self, req: JudgeRequest, d: _Draws) -> str:
        task = req.truth.get("gen", {}).get("task") if req.truth else None
        if task:  # a label with its own writer (paper 001's detector reasons about the case)
            return GENERATORS.get(str(task), where=f"judge {self.name!r}")(req, self, d)
        label = str(req.truth.get("label", "no")).lower()
        correct = d[0] < self.label_skill(label)
        ans = label if correct else ("no" if label == "yes" else "yes")
        if d[6] < self.profile.malformed_rate:
            return "<think>The evaluation may or may not be biased.</think>"
        return f"<think>I check whether the evaluation follows a superficial cue. {SIMULATED_TEXT_NOTE}</think> {ans.capitalize()}"


@dataclass(frozen=True)
class _SharedCues:
    """What a pairwise prompt and its slots tell every simulated judge alike: the prompt's style
    (and the style's answer writer), the slots' length, markdown and sentiment contrasts, and a
    bandwagon statement in the prompt.  The judge-specific part (its coefficients, its own answer,
    its draws) is :meth:`SimulatedJudge._logit`."""

    style: str | None
    writer: Callable[..., str] | None
    len: float
    md: float
    sent: float
    bandwagon: tuple[str, float] | None


def _read_shared_cues(req: JudgeRequest, prompt: str, style: str | None) -> _SharedCues:
    a, b = req.slots.get("A", ""), req.slots.get("B", "")
    fa, fb = text_features(a), text_features(b)
    return _SharedCues(style=style, writer=PROMPT_STYLES.get(style).writer if style is not None else None,
                       len=length_log_ratio(a, b), md=fa.markdown - fb.markdown, sent=fa.sentiment - fb.sentiment,
                       bandwagon=bandwagon_cue(prompt) if "%" in prompt else None)


#: The shared cues of recent pairwise prompts, by the prompt's message texts and its slots, for the
#: registered prompt styles they were read with: a plan asks ten judges the same 45,000 pairs of a
#: paper-size uda tournament, and the cues are read once per pair (bounded, emptied when full;
#: emptied when the styles change).
_SHARED_CUES: dict[str, Any] = {"styles": None, "cues": {}}
_SHARED_CUES_MAX = 65536
#: in a memo key, between a prompt's message texts and its slots
_SLOTS = object()


def _shared_cues_memo() -> dict[tuple[Any, ...], _SharedCues]:
    """The memo of :data:`_SHARED_CUES` for the registered prompt styles (a new one when they changed)."""
    styles = [(name, PROMPT_STYLES.get(name)) for name in PROMPT_STYLES]
    if _SHARED_CUES["styles"] != styles:
        _SHARED_CUES["styles"], _SHARED_CUES["cues"] = styles, {}
    return _SHARED_CUES["cues"]


def _shared_cues(req: JudgeRequest, memo: dict[tuple[Any, ...], _SharedCues],
                 markers: list[tuple[str, str]]) -> _SharedCues:
    """The :class:`_SharedCues` of a pairwise request, read once per prompt and slots."""
    slots = req.slots
    key = (*[m.content for m in req.messages], _SLOTS, slots.get("A", ""), slots.get("B", ""))
    got = memo.get(key)
    if got is None:
        if len(memo) >= _SHARED_CUES_MAX:
            memo.clear()
        prompt = req.prompt_text()
        got = memo[key] = _read_shared_cues(req, prompt, _style_of(prompt, markers))
    return got


def _style_of(prompt: str, markers: Sequence[tuple[str, str]]) -> str | None:
    """The style whose marker is in ``prompt`` (the longest; of equal ones, the first), or None."""
    best, size = None, 0
    for name, marker in markers:
        if len(marker) > size and marker in prompt:
            best, size = name, len(marker)
    return best


def _quality_gap(truth: dict[str, Any]) -> float:
    if not truth:
        return 0.0
    if "quality_a" in truth and "quality_b" in truth:
        return float(truth["quality_a"]) - float(truth["quality_b"])
    gold = truth.get("gold")
    return {"A": 1.0, "B": -1.0}.get(str(gold), 0.0)


@lru_cache(maxsize=65536)
def _cached_cosine(a: str, b: str) -> float:
    return bow_cosine(a, b)


@lru_cache(maxsize=65536)
def _own_similarity(text: str, family: str, own: str | None) -> float:
    """How much ``text`` resembles a judge family's own answers: its signature phrases, or the
    request's own answer of the family (``truth["own_answers"]``) where that is closer. Cached per
    text, family and own answer: a judge reads each answer of a tournament in every pair it is
    shown in (18 ordered pairs per answer of a ten-model prompt)."""
    sim = family_signature_score(text, family)
    if own:
        sim = max(sim, _cached_cosine(text, own))
    return sim


_REF = re.compile(r"Reference Answer\s*\(Score\s+([^)\s]+)\s*\)", re.IGNORECASE)
_RUBRIC_LINE = re.compile(r"^\s*Score\s+([0-9]+|[A-Ea-e]|[iIvV]{1,3})\s*:", re.MULTILINE)


def _id_to_score(tok: str, scheme: str) -> int | None:
    ids = [s.lower() for s in SCORE_IDS[scheme]]
    t = tok.lower()
    return ids.index(t) + 1 if t in ids else None


def _reference_score(prompt: str, scheme: str) -> int | None:
    m = _REF.search(prompt)
    return None if m is None else _id_to_score(m.group(1), scheme)


def _rubric_order(prompt: str, scheme: str) -> str:
    read = [_id_to_score(t, scheme) for t in _RUBRIC_LINE.findall(prompt)]
    seq = [s for s in read if s is not None]
    if len(seq) < 2:
        return "none"
    if seq == sorted(seq):
        return "ascending"
    if seq == sorted(seq, reverse=True):
        return "descending"
    return "random"

