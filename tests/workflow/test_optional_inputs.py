"""Inputs that may be missing (None in YAML, an absent key) where the type check found code that
assumed them present: each now takes its default or is refused with one line, never a TypeError."""

from __future__ import annotations

from pathlib import Path

import pytest

from judgelab.config import ConfigError
from judgelab.judges.transformers_backend import _positive_int
from judgelab.rbd.audit_log import resolve_detector


def test_a_batch_option_written_as_null_takes_its_default():
    # ``batch_size: null`` used to reach ``None * HANDOVER_BATCHES``; it is the default, as when absent
    assert _positive_int({"batch_size": None}, "batch_size", 8, "judge tiny") == 8
    assert _positive_int({}, "batch_size", 8, "judge tiny") == 8
    assert _positive_int({"batch_size": 3}, "batch_size", 8, "judge tiny") == 3
    assert _positive_int({"max_batch_tokens": None}, "max_batch_tokens", None, "judge tiny") is None
    with pytest.raises(ConfigError, match="batch_size must be >= 1"):
        _positive_int({"batch_size": 0}, "batch_size", 8, "judge tiny")


def test_a_judge_file_whose_judges_key_is_empty_is_refused_in_one_line(tmp_path: Path):
    path = tmp_path / "judges.yaml"
    path.write_text("judges:\n", encoding="utf-8")  # the key is there, its list is not
    with pytest.raises(ConfigError, match=r"judges\.yaml: name one judge as .*found none"):
        resolve_detector({}, str(path))
