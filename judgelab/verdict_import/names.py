"""Display names for the models and judges of a report (``--names CSV``).

Logs name a model by its results folder (``gpt4_gamed``, ``claude-2.1``); readers know it by its
published name (``GPT-4 (Adversarial)``, ``Claude 2.1``).  :func:`read_display_names` reads either
of two CSV layouts into {name in the logs: display name}:

* ``name,display_name``: one row per name;
* AlpacaEval's published leaderboard (``docs/data_AlpacaEval_2/<annotator>_leaderboard.csv``),
  whose ``name`` column is the display name and whose ``samples`` column links to
  ``results/<folder>/model_outputs.json``: the folder is the name in the logs.  A row without such
  a link names no folder and is skipped.

A name the file does not list keeps its own name.  A file that is neither layout, or that gives
one name two display names, is refused in one line naming the file (and the row).
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

from judgelab.io import InputError

#: the results folder in an AlpacaEval ``samples`` link (``.../results/<folder>/model_outputs.json``)
_ALPACA_FOLDER = re.compile(r"/results/([^/]+)/")


def read_display_names(path: str | Path) -> dict[str, str]:
    """{name in the logs: display name} from ``path`` (either layout of the module docstring)."""
    p = Path(path)
    try:
        with p.open(encoding="utf-8-sig", newline="") as f:
            reader = csv.DictReader(f)
            header = [h.strip() for h in (reader.fieldnames or [])]
            rows = [{(k or "").strip(): (v or "").strip() for k, v in r.items() if isinstance(v, str) or v is None}
                    for r in reader]
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise InputError(f"{p}: cannot read the names file ({exc})") from None
    if "name" in header and "display_name" in header:
        pairs = [(i, r.get("name", ""), r.get("display_name", "")) for i, r in enumerate(rows, start=2)]
        for i, name, shown in pairs:
            if not name or not shown:
                raise InputError(f"{p}: row {i}: empty {'name' if not name else 'display_name'}")
    elif "name" in header and "samples" in header:  # AlpacaEval's published leaderboard
        pairs = []
        for i, r in enumerate(rows, start=2):
            m = _ALPACA_FOLDER.search(r.get("samples", ""))
            if m and r.get("name"):
                pairs.append((i, m.group(1), r["name"]))
    else:
        raise InputError(f"{p}: a names file needs the columns name,display_name (or AlpacaEval's leaderboard "
                         f"columns name and samples); found {', '.join(header) or 'no header'}")
    out: dict[str, str] = {}
    for i, name, shown in pairs:
        if out.get(name, shown) != shown:
            raise InputError(f"{p}: row {i}: {name!r} has two display names ({out[name]!r} and {shown!r})")
        out[name] = shown
    return out
