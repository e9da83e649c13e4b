"""Read the records of a recorded-verdict file: JSON, JSONL, CSV, TSV or parquet.

Every reader returns plain dicts (nested JSON kept), so one mapping addresses any
format.  CSV/TSV cells are read as text with empty cells kept empty (``""``), never
``NaN``: a verdict that was empty when written stays empty when read back.

Records stream: JSONL line by line, a JSON array element by element (a file of a
million records is never one Python object), parquet and CSV/TSV in batches.  A gzip
file (``.jsonl.gz``, or gzip whatever its name) is read through ``gzip`` transparently.

Bad input raises :class:`~judgelab.io.InputError` naming the file, the line or row, and
what to do: an empty file, a CSV row with fewer fields than the header (never a row of
empty cells), text that is not UTF-8 (latin-1, UTF-16), JSON nested deeper than the
parser goes, a file that is not parquet.
"""

from __future__ import annotations

import codecs
import gzip
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from judgelab.io import InputError

SUFFIX_FORMATS = {".json": "json", ".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".tsv": "tsv",
                  ".parquet": "parquet", ".pq": "parquet", ".eval": "inspect_ai"}
#: formats read by their own module (``module:function`` yielding ``(row, record)``), imported when used
RECORD_READERS = {"inspect_ai": "judgelab.verdict_import.inspect_log:iter_inspect_records",
                  "rewardbench2": "judgelab.verdict_import.rewardbench2_log:iter_rewardbench2_records",
                  "promptfoo": "judgelab.verdict_import.promptfoo_log:iter_promptfoo_records"}
#: a compression suffix read through, before the format's suffix (``x.jsonl.gz``)
COMPRESSED_SUFFIXES = (".gz",)
_GZIP_MAGIC = b"\x1f\x8b"
_REENCODE = "re-encode it as UTF-8 (e.g. iconv -f LATIN1 -t UTF-8 FILE > FILE.utf8)"


def data_suffix(path: Path) -> str:
    """The format suffix of a file name, a compression suffix skipped (``a.jsonl.gz`` -> ``.jsonl``)."""
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] in COMPRESSED_SUFFIXES:
        suffixes.pop()
    return suffixes[-1] if suffixes else ""


def detect_format(path: Path, fmt: str = "auto") -> str:
    if fmt != "auto":
        return fmt
    f = SUFFIX_FORMATS.get(data_suffix(path))
    if f is None:
        raise InputError(f"{path}: cannot tell the file type from the suffix {path.suffix!r}; "
                         f"give the mapping's file_type, one of {sorted(set(SUFFIX_FORMATS.values()))}")
    return f


def _descend(obj: Any, path: tuple[Any, ...], where: str) -> Any:
    for k in path:
        try:
            obj = obj[k]
        except (KeyError, IndexError, TypeError):
            raise InputError(f"{where}: no records at {'.'.join(map(str, path))!r}") from None
    return obj


def read_records(path: str | Path, fmt: str = "auto", records: tuple[Any, ...] = ()) -> list[tuple[int, dict[str, Any]]]:
    """``(row number, record)`` pairs; row numbers are 1-based lines for JSONL, 0-based elements/rows otherwise."""
    return list(iter_records(path, fmt, records))


#: rows per parquet/CSV batch: bounds the memory of the records in flight at any size of file
BATCH_ROWS = 65_536
#: characters read at a time from a JSON array
JSON_BLOCK = 1 << 20


def _is_gzip(p: Path) -> bool:
    with p.open("rb") as fh:
        return fh.read(2) == _GZIP_MAGIC


def open_binary(p: Path) -> gzip.GzipFile | io.BufferedReader:
    """The file's bytes, gunzipped when it is gzip (by content, not by name)."""
    return gzip.open(p, "rb") if _is_gzip(p) else p.open("rb")


def open_text(p: Path) -> IO[str]:
    """The file as UTF-8 text (gunzipped when gzip); a UTF-16 byte-order mark is an error that says so."""
    raw = open_binary(p)
    head = raw.peek(4)[:4] if hasattr(raw, "peek") else b""
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raw.close()
        raise InputError(f"{p}: the file is UTF-16 text; judgelab reads UTF-8: re-encode it "
                         f"(e.g. iconv -f UTF-16 -t UTF-8 FILE > FILE.utf8)")
    return io.TextIOWrapper(raw, encoding="utf-8-sig")


def iter_records(path: str | Path, fmt: str = "auto", records: tuple[Any, ...] = ()
                 ) -> Iterator[tuple[int, dict[str, Any]]]:
    """The records of :func:`read_records`, streamed (see the module docstring)."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"{p}: file not found")
    if p.is_dir():
        raise InputError(f"{p}: is a folder; give the files in it (or the folder as an input of the log list)")
    fmt = detect_format(p, fmt)
    if fmt in RECORD_READERS:  # a tool's own log layout (inspect_ai, RewardBench 2): its reader module
        import importlib
        module, func = RECORD_READERS[fmt].split(":")
        yield from getattr(importlib.import_module(module), func)(p)
        return
    if fmt not in ("jsonl", "json", "csv", "tsv", "parquet"):
        raise InputError(f"{p}: unknown file type {fmt!r}")
    if p.stat().st_size == 0 and fmt != "jsonl":
        raise InputError(f"{p}: the file is empty (0 bytes); give a {fmt.upper()} file with records")
    try:
        if fmt == "jsonl":
            yield from _jsonl_records(p)
        elif fmt == "json":
            yield from _json_records(p, records)
        elif fmt in ("csv", "tsv"):
            yield from _csv_records(p, fmt)
        else:
            yield from _parquet_records(p)
    except UnicodeDecodeError as exc:
        raise InputError(f"{p}: not UTF-8 text (byte {exc.object[exc.start:exc.start + 1]!r} at offset "
                         f"{exc.start} of a block); {_REENCODE}") from None
    except (EOFError, gzip.BadGzipFile, OSError) as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise InputError(f"{p}: cannot be read ({type(exc).__name__}: {exc}); is the file complete?") from None


def _loads(text: str, where: object, *, whole: bool = False) -> Any:
    """``json.loads`` with the one-line errors: a line of a JSONL file (``where`` names the line) or a
    ``whole`` JSON file (the error names the line in it too)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        at = f"line {exc.lineno} column {exc.colno}" if whole else f"column {exc.colno}"
        raise InputError(f"{where}: not valid JSON ({exc.msg} at {at})") from None
    except RecursionError:
        raise InputError(f"{where}: JSON nested too deeply to read; flatten the record{'s' if whole else ''}") from None


def load_json_object(p: Path, fmt: str, expects: str) -> dict[str, Any]:
    """A whole JSON file that is one object (a tool's own log layout: promptfoo's ``output.json``,
    a RewardBench 2 scores file); anything else is one line naming the file and what ``fmt``
    expects there (``expects``: its keys, for the message)."""
    try:
        doc = json.loads(p.read_bytes())
    except UnicodeDecodeError as exc:
        raise InputError(f"{p}: not UTF-8 text (offset {exc.start}); is this a {fmt} file?") from None
    except (json.JSONDecodeError, RecursionError) as exc:
        raise InputError(f"{p}: not valid JSON ({type(exc).__name__}: {exc}); is the file complete?") from None
    if not isinstance(doc, dict):
        raise InputError(f"{p}: format {fmt!r} expects one JSON object ({expects}), got a {type(doc).__name__}")
    return doc


def _jsonl_records(p: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)``; a malformed line names the file and line."""
    first = True  # the first line with text
    with open_binary(p) as fh:
        for n, raw in enumerate(fh, start=1):
            if n == 1:
                if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
                    raise InputError(f"{p}: the file is UTF-16 text; judgelab reads UTF-8: re-encode it "
                                     f"(e.g. iconv -f UTF-16 -t UTF-8 FILE > FILE.utf8)")
                raw = raw.removeprefix(codecs.BOM_UTF8)
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise InputError(f"{p}:{n}: not UTF-8 text; {_REENCODE}") from None
            if not line.strip():
                continue
            if first and line.lstrip().startswith("["):
                _refuse_array(p, line)
            first = False
            obj = _loads(line, f"{p}:{n}")
            if not isinstance(obj, dict):
                raise InputError(f"{p}:{n}: expected a JSON object, got {type(obj).__name__}")
            yield n, obj


def _refuse_array(p: Path, line: str) -> None:
    """A JSONL file whose first line opens a JSON array (an array on one line, or a pretty-printed
    one): a JSON file given to a format that reads JSON lines, which ``json.loads`` of its first
    line would call "not valid JSON" or "a list".  A line that is one JSON object is no array."""
    try:
        whole = json.loads(line)
    except (json.JSONDecodeError, RecursionError):
        whole = []  # "[" opening a multi-line array
    if isinstance(whole, list):
        raise InputError(f"{p}: a JSON array, expected JSON lines (one JSON object per line); write it as "
                         f"JSON lines (e.g. jq -c '.[]' FILE > FILE.jsonl) or read it with a JSON mapping "
                         f"(file_type: json)")


def _json_records(p: Path, records: tuple[Any, ...]) -> Iterator[tuple[int, dict[str, Any]]]:
    with open_text(p) as fh:
        head = fh.read(JSON_BLOCK)
        if not records and head.lstrip().startswith("["):
            yield from _array_elements(fh, p, head, head.index("[") + 1)
            return
        text = head + fh.read()
    data = _loads(text, p, whole=True)
    data = _descend(data, records, str(p))
    if isinstance(data, dict):  # {id: record} files
        data = [{"_key": k, **v} if isinstance(v, dict) else {"_key": k, "value": v} for k, v in data.items()]
    if not isinstance(data, list):
        raise InputError(f"{p}: expected a JSON array of records, got {type(data).__name__}")
    for i, r in enumerate(data):
        yield i, _object(r, p, i)


def _object(r: Any, p: Path, i: int) -> dict[str, Any]:
    if not isinstance(r, dict):
        raise InputError(f"{p} element {i}: expected a JSON object, got {type(r).__name__}")
    return r


def _array_elements(fh: IO[str], p: Path, buf: str, pos: int) -> Iterator[tuple[int, dict[str, Any]]]:
    """The elements of a JSON array, one at a time (``buf[:pos]`` is the text up to its ``[``).

    Hand-written on :meth:`json.JSONDecoder.raw_decode` (no streaming JSON parser is a judgelab
    dependency): the buffer holds the element being decoded and the block after it, so memory
    follows the largest record, not the file.  Errors give the line and column in the file."""
    dec = json.JSONDecoder()
    line, col0 = 1, 0  # line of buf[0], and its column offset when buf[0] is not at a line start
    i, eof, expect_value = 0, False, True

    def fill() -> bool:
        nonlocal buf, pos, eof, line, col0
        block = fh.read(JSON_BLOCK)
        if not block:
            eof = True
            return False
        dropped = buf[:pos]
        nl = dropped.rfind("\n")
        line += dropped.count("\n")
        col0 = len(dropped) - nl - 1 if nl >= 0 else col0 + len(dropped)
        buf, pos = buf[pos:] + block, 0
        return True

    def skip() -> str:
        nonlocal pos
        while True:
            while pos < len(buf) and buf[pos].isspace():
                pos += 1
            if pos < len(buf) or not fill():
                return buf[pos] if pos < len(buf) else ""

    def where(e: int) -> str:
        last = buf.rfind("\n", 0, e)
        return f"line {line + buf.count(chr(10), 0, e)} column {e - last if last >= 0 else col0 + e + 1}"

    while True:
        c = skip()
        if c == "]" and (i == 0 or not expect_value):
            pos += 1
            if skip():
                raise InputError(f"{p}: not valid JSON (extra data after the array at {where(pos)})")
            return
        if not expect_value:
            if c != ",":
                raise InputError(f"{p}: not valid JSON (expected ',' or ']' after element {i - 1} at {where(pos)}"
                                 f"{'; the file ends early' if c == '' else ''})")
            pos += 1
            expect_value = True
            continue
        while True:
            try:
                obj, end = dec.raw_decode(buf, pos)
            except json.JSONDecodeError as exc:
                if fill():
                    continue
                raise InputError(f"{p}: not valid JSON ({exc.msg} at {where(exc.pos)}) in element {i}") from None
            except RecursionError:
                raise InputError(f"{p} element {i}: JSON nested too deeply to read; flatten the record") from None
            if end == len(buf) and not eof and fill():  # a number may go on in the next block
                continue
            break
        pos = end
        yield i, _object(obj, p, i)
        i += 1
        expect_value = False


def _csv_records(p: Path, fmt: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """CSV/TSV rows as dicts of text cells (``""`` when empty), read by the ``csv`` module.

    Not pandas: its reader fills a row that is cut short with empty cells, so a row of 10 of 27
    fields would import as a verdict with nothing in it; here every row must have as many fields
    as the header.  A repeated header name gets a suffix (``a``, ``a.1``), never overwrites a cell."""
    import csv

    with open_text(p) as fh:
        rows = csv.reader(fh, delimiter="," if fmt == "csv" else "\t", strict=True)
        try:
            header = next((r for r in rows if r), None)
            if header is None:
                raise InputError(f"{p}: no header line; give a {fmt.upper()} file with a header and rows")
            names = _unique_names(header)
            n = 0
            for r in rows:
                if not r:
                    continue  # a blank line, as pandas skips it
                if len(r) != len(names):
                    what = "cut short" if len(r) < len(names) else "longer than the header"
                    raise InputError(f"{p} row {n} (line {rows.line_num}): {len(r)} of {len(names)} fields; the row "
                                     f"is {what} (a field holding the separator or a newline must be quoted)")
                yield n, dict(zip(names, r, strict=True))
                n += 1
        except csv.Error as exc:
            raise InputError(f"{p}: not a valid {fmt.upper()} file (line {rows.line_num}: {exc}); quote fields "
                             f"that hold the separator, and close every quote") from None


def _unique_names(header: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for h in header:
        name, k = h, seen.get(h, 0)
        while name in seen:
            k += 1
            name = f"{h}.{k}"
        seen[h] = k
        seen[name] = 0
        out.append(name)
    return out


def _parquet_records(p: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(p)
    except (pa.ArrowInvalid, pa.ArrowException, OSError) as exc:
        raise InputError(f"{p}: not a parquet file ({exc}); give a parquet file or name the format") from None
    n = 0
    try:
        for batch in pf.iter_batches(batch_size=BATCH_ROWS):
            for r in batch.to_pylist():
                yield n, {k: _plain(v) for k, v in r.items()}
                n += 1
    except (pa.ArrowInvalid, pa.ArrowException) as exc:
        raise InputError(f"{p} row {n}: the parquet file is damaged ({exc})") from None


def _plain(v: Any) -> Any:
    """A value of pyarrow's ``to_pylist`` with every NaN (a missing float cell) as None,
    inside lists and structs too."""
    if isinstance(v, float):
        return None if v != v else v
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    return v
