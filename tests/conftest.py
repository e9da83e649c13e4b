"""Shared test setup: offline hub, quiet progress bars, the public-data root."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("JUDGELAB_PROGRESS", "0")
# the ledger of single-file outputs judgelab wrote (judgelab.io.written_ledger): one per test process,
# never the user's own under ~/.local/state
os.environ.setdefault("JUDGELAB_WRITTEN_LEDGER", os.path.join(tempfile.mkdtemp(prefix="judgelab-ledger-"), "written.tsv"))

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def data_root() -> Path:
    """``$JUDGELAB_DATA`` or ``../shared/data``; skips the test when neither exists."""
    from judgelab.datasets.sources import ENV_VAR, data_root

    root = data_root()
    if root is None or not root.is_dir():
        pytest.skip(f"public data not available: set ${ENV_VAR} or place it at ../shared/data")
    return root


def pytest_configure(config: pytest.Config) -> None:
    """Keep the order below when pytest-xdist hands out files: by default ``--dist loadfile`` re-sorts
    them by their number of tests (``--loadscope-reorder``), which put the files of a few long tests
    (the real-model slices, the 10,000-model leaderboard, the SLURM run) behind the files of many short
    ones, and one worker ran them alone at the end (docs/benchmarks.md, "The README's test command")."""
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``slow`` (subprocess pipelines, real models, servers) run first.

    Under pytest-xdist (the README's ``-n auto --dist loadfile``) the workers take files in
    this order: starting with the long ones keeps both cores busy to the end, where sorted by
    name a long file picked up last leaves one worker alone for minutes.  The sort is stable,
    so the order within each group is the collection order (the same on every worker)."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture
def taken(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Files the columnar verdict reader read to the end (the rest went back to the record path)."""
    from judgelab.verdict_import import columnar

    done: list[str] = []
    real = columnar.read_file

    def spy(path, *a, **k):  # type: ignore[no-untyped-def]
        out = real(path, *a, **k)
        done.append(Path(path).name)
        return out

    monkeypatch.setattr(columnar, "read_file", spy)
    return done
