"""Replay: verdicts recorded by real judges in public data, served as a backend.

Real judges' raw outputs (e.g. the six LLMBar evaluators' completions, both
presentation orders) answer requests whose candidate texts match a recorded
presentation.  The raw completion is returned, not the recorded winner, so the
pipeline's own parser produces the verdict exactly as for a live judge.  A log that
holds only labels (no raw text) answers with the recorded verdict written in the
request's format.  A request that was never recorded is an error (never cached),
with a message saying so.

Recordings come from the generic import (:mod:`judgelab.verdict_import`), so any
format it reads can be replayed.  Options:

* ``source``: a preset name of :data:`judgelab.verdict_import.PRESETS` (``llmbar``,
  ``arena_hard``, ``fastchat_pairwise``, ``judgebench``, ``alpaca_eval``, ``judgelab``),
  or ``mapping``: a custom mapping dict (``{preset: name, ...}`` overrides a preset);
* ``path``: the file (relative paths are resolved against the data root, see
  :mod:`judgelab.datasets.sources`); ``tables``: side-table files by name;
* ``recorded_judge``: keep only this judge's rows when the file holds several.

Two identical responses in one pair give one text for both orders; the two recorded
answers are then told apart by the request's presentation order, which also enters
the cache key of such requests (their prompts are identical).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from judgelab.config import ConfigError, JudgeSpec
from judgelab.judges import BACKENDS
from judgelab.judges.base import Judge
from judgelab.records import JudgeRequest, OutputKind, RawAnswer

if TYPE_CHECKING:  # the importer (pandas, scipy) loads with the first replay judge, not with the backend registry
    from judgelab.verdict_import.importer import Recording, ReplayEntry


def load_recording(options: dict, *, where: str) -> Recording:
    from judgelab.datasets.sources import resolve_data_path
    from judgelab.verdict_import import import_verdicts, mapping_from_config, replay_recording

    if "path" not in options:
        raise ConfigError(f"{where}: replay needs option 'path'")
    if "source" not in options and "mapping" not in options:
        raise ConfigError(f"{where}: replay needs option 'source' (a log format preset) or 'mapping'")
    mapping = mapping_from_config(options.get("mapping") or str(options["source"]), where=f"{where}/mapping")
    path = resolve_data_path(str(options["path"]))
    tables = {k: [str(resolve_data_path(str(p)))] for k, p in (options.get("tables") or {}).items()}
    table = import_verdicts([path], mapping, tables=tables)
    if options.get("recorded_judge"):
        table = table[table["judge"] == str(options["recorded_judge"])]
        if table.empty:
            raise ConfigError(f"{where}: no verdicts of recorded_judge {options['recorded_judge']!r} in {path}")
    return replay_recording(table)


@BACKENDS.register("replay")
class ReplayJudge(Judge):
    recorded = True
    batch_size = 1024

    def __init__(self, spec: JudgeSpec) -> None:
        super().__init__(spec)
        from judgelab.datasets.sources import resolve_data_path

        where = f"judge {spec.name!r} options"
        self.recording = load_recording(dict(spec.options), where=where)
        self.path = resolve_data_path(str(spec.options["path"]))

    def identity_extra(self) -> dict:
        return {"source": self.spec.options.get("source", "mapping"), "path": str(self.spec.options["path"])}

    def key(self, request: JudgeRequest, payload_utf8: bytes | None = None) -> str:
        a, b = request.slots.get("A"), request.slots.get("B")
        if a is not None and a == b and "order" in request.meta:
            return request.key({**self.identity(), "order": request.meta["order"]}, payload_utf8=payload_utf8)
        return super().key(request, payload_utf8)

    def _pick(self, req: JudgeRequest, hits: list[ReplayEntry]) -> ReplayEntry | None:
        prompt = req.prompt_text()
        match = [e for e in hits if e.instruction and e.instruction in prompt] or list(hits)
        if req.slots.get("A") == req.slots.get("B") and "order" in req.meta:
            same = [e for e in match if e.order == req.meta["order"]]
            match = same or match
        return match[0] if match else None

    def answer(self, requests: Sequence[JudgeRequest]) -> list[RawAnswer]:
        from judgelab.judges.verdict_text import format_choice

        out = []
        for req in requests:
            if req.kind is not OutputKind.PAIRWISE:
                out.append(RawAnswer(text=None, error=f"replay judge {self.name!r} only has pairwise verdicts"))
                continue
            hit = self._pick(req, self.recording.get((req.slots.get("A", ""), req.slots.get("B", "")), []))
            if hit is None:
                out.append(RawAnswer(text=None, error=f"not recorded in {self.path.name}: this pair in this order"))
                continue
            text = hit.raw_text
            if not text and hit.verdict_shown:
                try:
                    text = format_choice(req.kind, req.fmt, req.score_ids, hit.verdict_shown)
                except ValueError:
                    text = hit.verdict_shown
            prompt = req.prompt_text()
            out.append(RawAnswer(text=text, tokens_in=len(prompt) // 4 + 1, tokens_out=len(text) // 4 + 1))
        return out
