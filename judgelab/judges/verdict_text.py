"""Reading a verdict off next-token log-probabilities, shared by the local backends.

Paper 002 reads a pairwise verdict as "the arg max of the 'A'/'B' next-token
logits" instead of parsing generated text.  The ``transformers`` and ``vllm``
backends both offer this ``verdict_mode: logits``; this module holds the parts
they share, as plain functions testable without torch or vllm:

* :func:`answer_choices` -- which answers compete (``A``/``B``, optionally a tie
  choice; the five IDs of the request's score scheme; ``Yes``/``No``);
* :func:`choice_spellings` -- which token texts count as each choice (``"yes"``
  and ``"Yes"`` both mean Yes; a leading space is ignored by the callers);
* :func:`pick_choice` -- the winning choice among token log-probabilities.  A
  choice's log-probability is the log-sum-exp over every token spelling it (so
  ``"A"`` and ``" A"`` add up), i.e. the probability that the next token is any
  spelling of it; ties between choices go to the earlier choice in the list;
* :func:`format_choice` -- the winner written in the raw format the request
  asked for, so the ordinary parser (:mod:`judgelab.parsing`) reads it back;
* :func:`request_seed` -- the per-request sampling seed (judge seed + a hash of
  the request), so a sampled answer does not depend on what else was in its batch.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from judgelab.parsing import SCORE_IDS
from judgelab.records import JudgeRequest, OutputKind, canonical_json, sha256_hex

#: The verdict modes of the local backends.
VERDICT_MODES = ("generate", "logits")
#: Pairwise choices a logit verdict may use; ``C`` and ``tie`` both mean a tie.
PAIRWISE_CHOICES = ("A", "B", "C", "tie")
DEFAULT_PAIRWISE_CHOICES = ("A", "B")
#: Pairwise formats whose answer can express a tie (``letter`` and ``output_ab`` cannot).
TIE_FORMATS = frozenset({"json", "brackets", "labelled"})
LABEL_CHOICES = ("Yes", "No")


def answer_choices(request: JudgeRequest, options: Mapping[str, Any] | None = None) -> list[str]:
    """The answers that compete in a logit verdict for ``request``.

    Pairwise: ``options["logit_choices"]`` (default ``["A", "B"]``); tie choices
    (``"C"``, ``"tie"``) are kept only for formats that can express a tie.
    Score: the five IDs of the request's score-ID scheme, score 1 first.
    Label: ``Yes`` and ``No``.  Text requests have no choices (ValueError).
    """
    options = options or {}
    kind = OutputKind(request.kind)
    if kind is OutputKind.PAIRWISE:
        raw = options.get("logit_choices") or DEFAULT_PAIRWISE_CHOICES
        if isinstance(raw, str):
            raw = [raw]
        choices: list[str] = []
        for c in raw:
            c = str(c)
            if c not in PAIRWISE_CHOICES:
                raise ValueError(f"logit_choices: unknown pairwise choice {c!r}; known: {list(PAIRWISE_CHOICES)}")
            if c in ("C", "tie") and request.fmt not in TIE_FORMATS:
                continue
            if c not in choices:
                choices.append(c)
        if "A" not in choices or "B" not in choices:
            raise ValueError(f"logit_choices must include 'A' and 'B', got {list(raw)}")
        return choices
    if kind is OutputKind.SCORE:
        if request.score_ids not in SCORE_IDS:
            raise ValueError(f"unknown score-ID scheme {request.score_ids!r}; known: {sorted(SCORE_IDS)}")
        return list(SCORE_IDS[request.score_ids])
    if kind is OutputKind.LABEL:
        return list(LABEL_CHOICES)
    raise ValueError("text requests have no answer choices (they are always generated)")


def validate_logit_choices(raw: Any, *, where: str) -> list[str]:
    """Check a judge's ``logit_choices`` option up front (message names the judge)."""
    from judgelab.config import ConfigError

    if raw is None:
        return list(DEFAULT_PAIRWISE_CHOICES)
    vals = [raw] if isinstance(raw, str) else list(raw)
    bad = [v for v in vals if str(v) not in PAIRWISE_CHOICES]
    if bad:
        raise ConfigError(f"{where}: logit_choices {bad} unknown; known: {list(PAIRWISE_CHOICES)}")
    if "A" not in vals or "B" not in vals:
        raise ConfigError(f"{where}: logit_choices must include 'A' and 'B', got {vals}")
    return [str(v) for v in vals]


def choice_spellings(kind: OutputKind | str, choices: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """Token texts (after stripping whitespace) that count as each choice."""
    kind = OutputKind(kind)
    out: dict[str, tuple[str, ...]] = {}
    for c in choices:
        if kind is OutputKind.LABEL or (kind is OutputKind.PAIRWISE and c == "tie"):
            spellings: tuple[str, ...] = (c, c.lower(), c.capitalize(), c.upper())
        else:
            spellings = (c,)
        out[c] = tuple(dict.fromkeys(spellings))  # unique, order kept
    return out


def logsumexp(values: Iterable[float]) -> float:
    vals = [float(v) for v in values]
    if not vals:
        return -math.inf
    m = max(vals)
    if m == -math.inf:
        return m
    return m + math.log(sum(math.exp(v - m) for v in vals))


def pick_choice(
    top_logprobs: Mapping[str, float],
    choices: Sequence[str],
    spellings: Mapping[str, Sequence[str]] | None = None,
) -> tuple[str | None, dict[str, float]]:
    """The winning choice among token log-probabilities.

    ``top_logprobs`` maps decoded token texts (``"A"``, ``" A"``, ...) to their
    log-probabilities; a token counts for a choice when its text, stripped of
    whitespace, is one of the choice's ``spellings`` (default: the choice itself).
    Returns ``(winner, {choice: logprob})`` over the choices found; ``winner`` is
    None when no choice appears.  Equal log-probabilities go to the earlier choice.
    """
    spellings = spellings or {c: (c,) for c in choices}
    found: dict[str, float] = {}
    for c in choices:
        accepted = set(spellings.get(c, (c,)))
        hits = [lp for tok, lp in top_logprobs.items() if tok is not None and tok.strip() in accepted]
        if hits:
            found[c] = logsumexp(hits)
    if not found:
        return None, {}
    winner = max(found, key=lambda c: (found[c], -choices.index(c)))
    return winner, found


def format_choice(kind: OutputKind | str, fmt: str, score_ids: str, choice: str) -> str:
    """Write a logit verdict in the raw format the request asked for.

    Pairwise: ``letter`` -> ``A``; ``brackets`` -> ``[[A]]`` (a tie: ``[[C]]``);
    ``json`` -> ``{"verdict": "A"}``; ``output_ab`` -> ``Output (a)``; ``labelled``
    -> ``Verdict: A``.  Score: ``[RESULT] <id>``.  Label: ``Yes`` / ``No``.
    """
    kind = OutputKind(kind)
    if kind is OutputKind.PAIRWISE:
        verdict = "tie" if choice in ("C", "tie") else choice
        if verdict not in ("A", "B", "tie"):
            raise ValueError(f"not a pairwise choice: {choice!r}")
        if fmt == "letter":
            if verdict == "tie":
                raise ValueError("the 'letter' format cannot express a tie")
            return verdict
        if fmt == "brackets":
            return f"[[{'C' if verdict == 'tie' else verdict}]]"
        if fmt == "json":
            return '{"verdict": "' + verdict + '"}'
        if fmt == "output_ab":
            if verdict == "tie":
                raise ValueError("the 'output_ab' format cannot express a tie")
            return f"Output ({verdict.lower()})"
        if fmt == "labelled":
            return f"Verdict: {verdict}"
        raise ValueError(f"unknown pairwise format {fmt!r}")
    if kind is OutputKind.SCORE:
        ids = SCORE_IDS.get(score_ids)
        if ids is None:
            raise ValueError(f"unknown score-ID scheme {score_ids!r}; known: {sorted(SCORE_IDS)}")
        if choice not in ids:
            raise ValueError(f"{choice!r} is not a score ID of scheme {score_ids!r} {ids}")
        return f"[RESULT] {choice}"
    if kind is OutputKind.LABEL:
        low = choice.strip().lower()
        if low not in ("yes", "no"):
            raise ValueError(f"not a yes/no choice: {choice!r}")
        # a logit verdict has no reasoning: say so with an empty think block
        return f"<think></think> {low.capitalize()}" if fmt == "think" else low.capitalize()
    raise ValueError("text requests have no logit verdict")


def request_seed(base_seed: int, request: JudgeRequest) -> int:
    """A sampling seed for one request: the judge's seed plus a hash of the request.

    The same request always gets the same seed, whatever else is in its batch,
    so a sampled (temperature > 0) answer is reproducible; requests differing in
    any payload field (messages, format, params such as an ensemble member's
    temperature) get different seeds.
    """
    h = int(sha256_hex(canonical_json(request.payload()))[:15], 16)
    return (int(base_seed) + h) % (2**31 - 1)  # 31 bits: every sampler accepts it
