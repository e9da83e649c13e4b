"""Replay: verdicts recorded by real judges in public data, served as a backend.

Real judges' raw outputs (e.g. the six LLMBar evaluators' completions, both
presentation orders) answer requests whose candidate texts match a recorded
presentation.  The raw completion is returned, not the recorded winner, so the
pipeline's own parser produces the verdict exactly as for a live judge.  A request
that was never recorded is an error (never cached), with a message saying so.

Sources are a registry (:data:`REPLAY_SOURCES`): a loader returns
``{(text_shown_first, text_shown_second): [(instruction, raw_completion), ...]}``.
Options: ``source`` (registry name), ``path`` (file; relative paths are resolved
against the data root, see :mod:`judgelab.datasets.sources`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

from judgelab.config import ConfigError, JudgeSpec
from judgelab.judges import BACKENDS
from judgelab.judges.base import Judge
from judgelab.records import JudgeRequest, OutputKind, RawAnswer
from judgelab.registry import Registry

Recording = dict[tuple[str, str], list[tuple[str, str]]]
REPLAY_SOURCES: Registry[Callable[[Path], Recording]] = Registry("replay source")


@REPLAY_SOURCES.register("llmbar")
def load_llmbar_result(path: Path) -> Recording:
    """LLMBar ``evaluators/<judge>/<strategy>/result.json``: both orders per pair."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not valid JSON ({exc})") from None
    rec: Recording = {}
    for i, item in enumerate(data):
        try:
            res = item["results"][0]
            o1, o2, instr = item["output_1"], item["output_2"], item["input"]
            shown = {"swap = False": (o1, o2), "swap = True": (o2, o1)}
            for flag, (first, second) in shown.items():
                completion = res[flag]["completion"][0]
                rec.setdefault((first, second), []).append((instr, completion or ""))
        except (KeyError, IndexError, TypeError) as exc:
            raise ConfigError(f"{path}: element {i} lacks field {exc}") from None
    return rec


@BACKENDS.register("replay")
class ReplayJudge(Judge):
    batch_size = 1024

    def __init__(self, spec: JudgeSpec) -> None:
        super().__init__(spec)
        from judgelab.datasets.sources import resolve_data_path

        where = f"judge {spec.name!r} options"
        for k in ("source", "path"):
            if k not in spec.options:
                raise ConfigError(f"{where}: replay needs option {k!r}")
        loader = REPLAY_SOURCES.get(str(spec.options["source"]), where=where)
        self.path = resolve_data_path(str(spec.options["path"]))
        self.recording = loader(self.path)

    def identity_extra(self) -> dict:
        return {"source": self.spec.options["source"], "path": str(self.spec.options["path"])}

    def answer(self, requests: Sequence[JudgeRequest]) -> list[RawAnswer]:
        out = []
        for req in requests:
            if req.kind is not OutputKind.PAIRWISE:
                out.append(RawAnswer(text=None, error=f"replay judge {self.name!r} only has pairwise verdicts"))
                continue
            hits = self.recording.get((req.slots.get("A", ""), req.slots.get("B", "")), [])
            prompt = req.prompt_text()
            match = [c for instr, c in hits if instr in prompt] or [c for _, c in hits]
            if not match:
                out.append(RawAnswer(text=None, error=f"not recorded in {self.path.name}: this pair in this order"))
            else:
                out.append(RawAnswer(text=match[0], tokens_in=len(prompt) // 4 + 1, tokens_out=len(match[0]) // 4 + 1))
        return out
