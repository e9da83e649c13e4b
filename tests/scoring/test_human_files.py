"""When paper 004's optional human-scored set counts as here (judgelab/scoring/human_files.py).

:func:`absent_reason` is empty when the set's file is found where :func:`resolve_data_path` looks
(a path as given, ``<data root>/<rel>``, ``results/downloads/<rel>``), and otherwise is the one line
the run logs: the file, the data root (or that none is set), the downloads folder and, for a pinned
source, its URL.  It never downloads.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from judgelab.datasets import sources
from judgelab.scoring.human_files import absent_reason

BIGGEN = "biggen/human_eval"


@pytest.fixture
def places(tmp_path, monkeypatch):
    """A data root and a repository (whose results/downloads is the second place) under tmp_path, both
    empty; a download fails the test."""
    root, repo = tmp_path / "data", tmp_path / "repo"
    root.mkdir()
    repo.mkdir()
    monkeypatch.setenv(sources.ENV_VAR, str(root))
    monkeypatch.setattr(sources, "REPO_ROOT", repo)
    monkeypatch.setattr(sources, "download_file", lambda *a, **k: pytest.fail("absent_reason downloaded"))
    return root, repo / "results" / "downloads"


def _put(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x")


def test_an_absent_pinned_set_names_the_file_the_root_the_downloads_and_the_url(places):
    root, downloads = places
    src = sources.SOURCES[BIGGEN]
    assert absent_reason("biggen", {"source": BIGGEN}) == (
        f"scoring.datasets.biggen: human-scored set absent: {src.rel} is not under {root} nor in {downloads}"
        f"; download {src.url} to {src.rel} there")


def test_an_absent_unpinned_file_has_no_download_advice(places):
    root, downloads = places
    assert absent_reason("mine", {"source": "mine/set.jsonl"}) == (
        f"scoring.datasets.mine: human-scored set absent: mine/set.jsonl is not under {root} nor in {downloads}")


def test_without_a_data_root_the_line_says_so(places, monkeypatch, tmp_path):
    _, downloads = places
    monkeypatch.delenv(sources.ENV_VAR)
    assert sources.data_root() is None  # no $JUDGELAB_DATA and no <repo>/../shared/data
    line = absent_reason("flask_full", {"source": "prometheus_eval/flask"})
    rel = sources.SOURCES["prometheus_eval/flask"].rel
    assert line.startswith(f"scoring.datasets.flask_full: human-scored set absent: {rel} is not under "
                           f"no data root ($JUDGELAB_DATA unset) nor in {downloads}; download ")


@pytest.mark.parametrize("where", ["root", "downloads"])
def test_a_pinned_set_under_the_root_or_in_the_downloads_is_here(places, where):
    root, downloads = places
    assert absent_reason("biggen", {"source": BIGGEN})
    _put((root if where == "root" else downloads) / sources.SOURCES[BIGGEN].rel)
    assert absent_reason("biggen", {"source": BIGGEN}) == ""


def test_the_pinned_file_is_looked_for_under_its_rel_not_its_source_name(places):
    """The source key ``biggen/human_eval`` is not the file: a file by that name does not count."""
    root, _ = places
    _put(root / BIGGEN)
    assert absent_reason("biggen", {"source": BIGGEN}).startswith("scoring.datasets.biggen: ")


def test_an_unpinned_file_counts_under_the_root_or_as_an_existing_path(places, tmp_path):
    root, _ = places
    _put(root / "mine/set.jsonl")
    assert absent_reason("mine", {"source": "mine/set.jsonl"}) == ""
    own = tmp_path / "elsewhere" / "set.jsonl"
    assert absent_reason("own", {"source": own}) != ""
    _put(own)
    assert absent_reason("own", {"source": own}) == ""  # a Path, as given


def test_a_relative_path_is_here_when_it_exists_from_the_working_directory(places, tmp_path, monkeypatch):
    """Not under the data root nor in the downloads, but there as given (a file of the checkout)."""
    monkeypatch.chdir(tmp_path)
    assert absent_reason("mine", {"source": "local/set.jsonl"}) != ""
    _put(tmp_path / "local/set.jsonl")
    assert absent_reason("mine", {"source": "local/set.jsonl"}) == ""
