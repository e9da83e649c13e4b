"""Shared test setup: offline hub, quiet progress bars, the public-data root."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("JUDGELAB_PROGRESS", "0")

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def data_root() -> Path:
    """``$JUDGELAB_DATA`` or ``../shared/data``; skips the test when neither exists."""
    from judgelab.datasets.sources import ENV_VAR, data_root

    root = data_root()
    if root is None or not root.is_dir():
        pytest.skip(f"public data not available: set ${ENV_VAR} or place it at ../shared/data")
    return root
