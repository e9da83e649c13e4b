"""Import recorded judge verdicts from any file format into one table.

One mechanism serves the replay backend (:mod:`judgelab.judges.replay`) and the bias
card (:mod:`judgelab.bias_card`): a file (JSON/JSONL/CSV/TSV/parquet) plus a column
mapping (:mod:`.mapping`, a preset of :mod:`.presets` or a custom dict) gives the
recorded verdict table of :mod:`.importer`.
"""

from judgelab.verdict_import.importer import (
    RECORDED_COLUMNS,
    import_verdicts,
    model_family,
    replay_recording,
)
from judgelab.verdict_import.mapping import build_mapping
from judgelab.verdict_import.presets import PRESETS, mapping_from_config, preset_mapping

__all__ = ["PRESETS", "RECORDED_COLUMNS", "build_mapping", "import_verdicts", "mapping_from_config",
           "model_family", "preset_mapping", "replay_recording"]
