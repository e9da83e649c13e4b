"""Paper 004's human-scored sets, read from their pinned downloads when present.

Table 2 (gold candidates against human scores) and the "Human" columns of Table 3 need the two
human-scored sets of paper 004 ("Datasets"): BiGGen-Bench (2,780 non-multilingual responses,
human scores) and FLASK (2,001 responses, human scores).  As published they are

* BiGGen-Bench: the ``human_eval`` split of the Hugging Face dataset
  ``prometheus-eval/BiGGen-Bench-Results``, ``data/human_eval-00000-of-00001.parquet`` at revision
  ``f34b56e0b3e5ce86687796c319c4fbc06f5e7b7e`` (data source ``biggen/human_eval``; loader ``biggen``);
* FLASK: Prometheus' ``eval/benchmark/data/flask_eval.json`` of ``prometheus-eval/prometheus-eval``
  at commit ``dcfb44272d5d0414832f5dbb8c2a05ebc2614234`` (data source ``prometheus_eval/flask``;
  loader ``prometheus``; ``human_score`` is the annotators' list, the gold their mean).

The URLs are pinned in :data:`judgelab.datasets.sources.SOURCES`.  A data set marked
``optional: true`` in ``scoring.datasets`` is read when its file is under the data root
(``$JUDGELAB_DATA``), in ``results/downloads/`` or at the path given; it is never downloaded
behind the user's back (the human-eval parquet alone is 13 MB), and when absent it leaves the run:
:class:`judgelab.scoring.plan.ScoringStudy` records one line saying which file is missing and where
to download it (:func:`judgelab.scoring.human_files.absent_reason`).  The table rules then keep the paper's cells of that set --
Table 2's rows against human scores, Table 3's rows against the human and the gold-judge scores --
with empty statistics and that line as their ``reason`` (:func:`absent_table2_rows`,
:func:`absent_table3_rows`), and each rule's log says the line once (:func:`log_absent`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

import pandas as pd

from judgelab.scoring.gold_candidates import RECORDED_GPT4, TABLE2_COLUMNS
from judgelab.scoring.metrics import TABLE3_COLUMNS, _variant_order
from judgelab.scoring.prompt import VARIANTS

log = logging.getLogger(__name__)

#: the gold sources a human-scored set gives Table 3 (paper 004: "Human" and "GPT-4.1" columns)
TABLE3_GOLDS = ("human", "gold_judge")



def log_absent(absent: Mapping[str, str]) -> None:
    """One log line per absent set (the rule's log)."""
    for name in sorted(absent):
        log.info("%s; its Table 2 / Table 3 cells are left empty", absent[name])


def absent_table3_rows(absent: Mapping[str, str], judges: Sequence[str],
                       variants_of: Mapping[str, Sequence[str]]) -> pd.DataFrame:
    """Table 3 rows of the absent sets: every judge x perturbation x gold (human, gold judge),
    ``n`` 0, statistics empty, ``reason`` the set's absent line."""
    rows = []
    for ds in sorted(absent):
        for src in TABLE3_GOLDS:
            for judge in sorted(judges):
                for v in _variant_order(list(variants_of.get(ds, ["baseline"]))):
                    rows.append({"dataset": ds, "gold_source": src, "judge": judge, "variant": v,
                                 "perturbation": VARIANTS.get(v).family if v in VARIANTS else "other",
                                 "n": 0, "n_unparsed": 0, "reason": absent[ds]})
    return pd.DataFrame(rows, columns=TABLE3_COLUMNS)


def absent_table2_rows(absent: Mapping[str, str], candidates: Sequence[str]) -> pd.DataFrame:
    """Table 2 rows of the absent sets: each gold candidate's protocol and the recorded GPT-4 scores
    against human scores, ``n`` 0, statistics empty, ``reason`` the set's absent line."""
    rows = []
    for ds in sorted(absent):
        for name, source in [*((c, "gold_protocol") for c in dict.fromkeys(candidates)), (RECORDED_GPT4, "recorded")]:
            rows.append({"dataset": ds, "reference_source": "human", "candidate": name, "source": source, "n": 0,
                         "n_unparsed": 0, "simulated": False, "reason": absent[ds]})
    return pd.DataFrame(rows, columns=TABLE2_COLUMNS)


def with_absent(table: pd.DataFrame, absent_rows: pd.DataFrame) -> pd.DataFrame:
    """``table`` with the absent sets' rows after its own (same columns, dtypes kept where possible)."""
    if absent_rows.empty:
        return table
    if table.empty:
        return absent_rows.reindex(columns=table.columns if len(table.columns) else absent_rows.columns)
    return pd.concat([table, absent_rows.reindex(columns=table.columns)], ignore_index=True)
