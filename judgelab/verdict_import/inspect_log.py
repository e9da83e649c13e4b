"""Read inspect_ai eval logs (``.eval`` and ``.json``) as one flat record per sample and scorer.

inspect_ai writes an eval log in two layouts: a ``.json`` file (one object: ``version``,
``status``, ``eval``, ``plan``, ``results``, ``stats``, ``samples``, ...) and a ``.eval`` file, a
zip archive holding ``header.json`` (the same object without samples), ``samples/<id>_epoch_<n>.json``
(one sample each), ``summaries.json``, ``reductions.json`` and ``_journal/``.  A sample has ``id``,
``epoch``, ``input`` (a string or a list of chat messages), ``target`` (a string or a list),
``output`` (``choices[0].message.content``, or ``completion``) and ``scores``: one entry per scorer,
``{value, answer, explanation, metadata}``.

Each (sample, scorer) becomes one record with the keys the ``inspect_ai`` preset maps:
``task``, ``run_id`` (two runs of one task are two sets of calls), ``eval_model``, ``scorer``, ``grader`` (the scorer's ``model`` parameter from
``results.scores``, else the evaluated model: ``model_graded_qa``/``model_graded_fact`` grade with
the task's own model unless given another), ``sample_id``, ``epoch``, ``input``, ``target``,
``answer`` (the scored text: the score's ``answer``, else the sample's output), ``value``,
``explanation``.  Why flat records: the mapping addresses one record per verdict, and a sample
holds one verdict per scorer, with the grader named only in the log's header.

When inspect_ai is installed its own reader (:func:`inspect_ai.log.read_eval_log`) reads the
file (it knows every log version it ever wrote); otherwise the archive and JSON are read here,
which covers the fields above.  Bad input raises :class:`~judgelab.io.InputError` naming the file
and the entry, sample or key.
"""

from __future__ import annotations

import json
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from judgelab.io import InputError

#: keys every eval log's header has (``.json`` logs and an ``.eval`` archive's ``header.json``)
HEADER_KEYS = ("eval",)


def _load_json(raw: bytes | str, where: str) -> Any:
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise InputError(f"{where}: not valid JSON ({type(exc).__name__}: {exc}); is the log complete?") from None


def _object(v: Any, where: str) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise InputError(f"{where}: expected a JSON object, got {type(v).__name__}")
    return v


def _read_with_inspect(p: Path) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
    """The header and samples by inspect_ai's own reader, or None when it is not installed."""
    try:
        from inspect_ai.log import read_eval_log  # type: ignore[import-not-found]
    except ImportError:
        return None
    try:
        log = read_eval_log(str(p))
        doc = log.model_dump(mode="json", exclude_none=True)
    except Exception as exc:  # any failure of the library's reader is bad input here
        raise InputError(f"{p}: inspect_ai cannot read this eval log ({type(exc).__name__}: "
                         f"{str(exc).splitlines()[0] if str(exc) else ''})") from None
    samples = doc.pop("samples", None) or []
    return doc, samples


def _read_plain(p: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The header and samples read from the file itself (no inspect_ai needed)."""
    if zipfile.is_zipfile(p):
        try:
            with zipfile.ZipFile(p) as zf:
                names = zf.namelist()
                if "header.json" not in names:
                    raise InputError(f"{p}: an .eval archive without header.json (entries: {names[:6]}); "
                                     f"is this an inspect_ai log?")
                header = _object(_load_json(zf.read("header.json"), f"{p}:header.json"), f"{p}:header.json")
                samples = [_object(_load_json(zf.read(n), f"{p}:{n}"), f"{p}:{n}")
                           for n in names if n.startswith("samples/") and n.endswith(".json")]
        except (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, OSError, EOFError, NotImplementedError) as exc:
            raise InputError(f"{p}: cannot read this .eval archive ({type(exc).__name__}: {exc}); "
                             f"is the file complete?") from None
        return header, samples
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{p}: neither a zip archive (.eval) nor UTF-8 JSON (byte at offset {exc.start})") from None
    doc = _object(_load_json(text, str(p)), str(p))
    samples = doc.pop("samples", None)
    if samples is None:
        samples = []
    if not isinstance(samples, list):
        raise InputError(f"{p}: key 'samples' should be a list of samples, got {type(samples).__name__}")
    return doc, [_object(s, f"{p} sample {i}") for i, s in enumerate(samples)]


def _text(v: Any) -> str:
    """A string, a list of strings (targets), or chat messages (inputs) as one text."""
    if v is None:
        return ""
    if isinstance(v, str):
        return v
    if isinstance(v, list):
        return "\n".join(t for t in (_text(x) for x in v) if t)
    if isinstance(v, dict):
        content = v.get("content", v.get("text"))
        return _text(content)
    return str(v)


def _output_text(sample: dict[str, Any]) -> str:
    out = sample.get("output")
    if not isinstance(out, dict):
        return ""
    if isinstance(out.get("completion"), str) and out["completion"]:
        return out["completion"]
    choices = out.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        return _text(choices[0].get("message"))
    return ""


def _graders(header: dict[str, Any], default: str) -> dict[str, str]:
    """Scorer name -> grader model: the scorer's ``model`` parameter where results states one."""
    results = header.get("results")
    scores = results.get("scores") if isinstance(results, dict) else None
    out: dict[str, str] = {}
    for s in scores if isinstance(scores, list) else []:
        if isinstance(s, dict):
            params = s.get("params")
            if not isinstance(params, dict):
                params = {}
            model = params.get("model") or params.get("grader_model")
            out[str(s.get("name"))] = str(model) if model else default
    return out


def iter_inspect_records(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(row, record)``: one record per sample and scorer, rows counted from 0 (see the module docstring)."""
    p = Path(path)
    read = _read_with_inspect(p) or _read_plain(p)
    header, samples = read
    for k in HEADER_KEYS:
        if k not in header:
            raise InputError(f"{p}: format 'inspect_ai' expects key {k!r} in the log header, missing "
                             f"(keys {sorted(header)[:12]}); is this an inspect_ai eval log?")
    ev = _object(header["eval"], f"{p} key 'eval'")
    task, model = ev.get("task"), ev.get("model")
    graders = _graders(header, str(model) if model else "")
    row = 0
    for i, s in enumerate(samples):
        where = f"{p} sample {i} (id {s.get('id')!r}, epoch {s.get('epoch')!r})"
        scores = s.get("scores")
        if scores is None:
            continue  # a sample not scored (an error or a cancelled run): no verdict stated
        if not isinstance(scores, dict):
            raise InputError(f"{where}: key 'scores' should be an object of scorer -> score, "
                             f"got {type(scores).__name__}")
        for name, sc in scores.items():
            sc = _object(sc, f"{where} score {name!r}")
            if "value" not in sc:
                raise InputError(f"{where} score {name!r}: expects key 'value', missing (keys {sorted(sc)[:8]})")
            value = sc["value"]
            yield row, {
                "task": task, "run_id": ev.get("run_id"), "eval_model": model, "scorer": name, "grader": graders.get(name, model),
                "sample_id": s.get("id"), "epoch": s.get("epoch"), "input": _text(s.get("input")),
                "target": _text(s.get("target")), "answer": sc.get("answer") or _output_text(s),
                "value": value if isinstance(value, (str, int, float, bool)) or value is None
                else json.dumps(value, sort_keys=True),
                "explanation": sc.get("explanation"),
            }
            row += 1
