"""``report.html`` of ``judgelab audit``: self-contained, escaped, and rendered by a real browser.

The page is opened in headless Chromium (Debian's ``chromium``, installed by
``scripts/install-services.sh``; skipped with the reason where it is absent): the screenshot is
not blank, every judge's section is in the rendered DOM, the browser logs no console message,
and the page makes no network request beyond those Chromium makes for an empty page.
"""

from __future__ import annotations

import html.parser
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from judgelab.bias_card.card import CardSettings
from judgelab.bias_card.planted import PlantedJudge, planted_log
from judgelab.bias_card.reliability import PANEL_JUDGE
from judgelab.bias_card.report import write_audit
from judgelab.plots.html_report import Figure, Page, Section, Table, render_page

# a name with every character HTML cares about, and one made to break out of an attribute
NASTY = ['judge<script>alert("x")</script>', "o'brien & \"co\" <b>"]
JUDGES = ["falcon-plain", *NASTY]


class _Refs(html.parser.HTMLParser):
    """Every tag and every URL-valued attribute of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.urls: list[str] = []
        self.sections: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        d = dict(attrs)
        for a in ("src", "href", "action", "poster", "data"):
            if d.get(a) is not None:
                self.urls.append(d[a] or "")
        if tag == "section":
            self.sections.append(d.get("data-key") or "")


def refs(text: str) -> _Refs:
    p = _Refs()
    p.feed(text)
    return p


@pytest.fixture(scope="module")
def audit_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("audit")
    logs = [planted_log(PlantedJudge(position=p, length=0.1), n_items=30, seed=i, judge=j)
            for i, (j, p) in enumerate(zip(JUDGES, (0.0, 0.4, 0.2), strict=True))]
    write_audit(pd.concat(logs, ignore_index=True), out, title="planted <logs>",
                settings=CardSettings(n_resamples=50))
    return out


def test_page_escapes_every_name_and_fetches_nothing(audit_dir: Path):
    text = (audit_dir / "report.html").read_text(encoding="utf-8")
    r = refs(text)
    # the only script-like thing would be the judge's name: it is text, never a tag
    assert "script" not in r.tags and "<script" not in text
    assert 'judge&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;' in text
    assert "o&#x27;brien &amp; &quot;co&quot; &lt;b&gt;" in text
    # the summary first, a section per judge keyed by its (unescaped) name, the between-judge rows, the settings
    assert r.sections[0] == "summary"
    assert sorted(r.sections) == sorted(["summary", *JUDGES, PANEL_JUDGE, "settings"])
    # every reference is inline data or an anchor on the page: nothing to fetch
    assert r.urls and all(u.startswith(("data:", "#")) for u in r.urls), r.urls
    assert sum(u.startswith("data:image/png;base64,") for u in r.urls) == 1
    # the card's statuses are there, marked, with their reasons
    card = pd.read_csv(audit_dir / "bias_card.csv", keep_default_na=False)
    for status in set(card["status"]):
        assert f">{status}</td>" in text
    assert 'class="st-detected"' in text and "SIMULATED JUDGES" in text
    whys = {r or n for r, n in zip(card["reason"], card["note"], strict=True)} - {""}
    assert whys and all(_escaped(x) in text for x in whys)


def _escaped(s: str) -> str:
    import html

    return html.escape(s, quote=True)


def test_render_page_marks_status_cells_and_numbers():
    t = Table("t", pd.DataFrame({"metric": ["m<1>"], "status": ["underpowered"], "estimate": [0.12345],
                                 "n": [np.int64(7)], "missing": [np.nan]}))
    text = render_page(Page(title="T & T", sections=[Section("s", tables=[t], figures=[Figure("f", b"\x89PNG")])]))
    assert '<td class="st-underpowered">underpowered</td>' in text
    assert '<td class="num">0.123</td>' in text and '<td class="num">7</td>' in text and '<td class="num">n/a</td>' in text
    assert "m&lt;1&gt;" in text and "<title>T &amp; T</title>" in text
    assert 'src="data:image/png;base64,iVBORw=="' in text


# ---------------------------------------------------------------------------------------------
# a real browser

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"]


def chromium() -> str | None:
    return next((p for p in (shutil.which(n) for n in ("chromium", "chromium-browser")) if p), None)


@dataclass
class Rendered:
    dom: str
    console: list[str]
    urls: set[str]
    screenshot: Path


def render(page: Path, work: Path) -> Rendered:
    """Open ``page`` in a fresh headless Chromium profile: its DOM after load, console lines, requests."""
    exe = chromium()
    assert exe
    work.mkdir(parents=True, exist_ok=True)

    def run(*extra: str, tag: str) -> subprocess.CompletedProcess:
        net = work / f"net-{tag}.json"
        try:
            proc = subprocess.run([exe, *CHROMIUM_FLAGS, f"--user-data-dir={work / f'profile-{tag}'}",
                                   "--enable-logging=stderr", "--v=0", f"--log-net-log={net}", *extra,
                                   page.resolve().as_uri()], capture_output=True, text=True, timeout=120,
                                  env={**os.environ, "HOME": str(work)})
        except subprocess.TimeoutExpired:  # e.g. a dialog (alert) that a headless browser waits on forever
            pytest.fail(f"chromium did not finish rendering {page} within 120 s")
        assert proc.returncode == 0, proc.stderr[-3000:]
        return proc

    dom = run("--dump-dom", tag="dom")
    shot = work / "shot.png"
    run(f"--screenshot={shot}", "--window-size=1280,1600", tag="shot")
    console = [ln for proc in (dom,) for ln in proc.stderr.splitlines() if ":CONSOLE" in ln]
    return Rendered(dom.stdout, console, _net_urls(work / "net-dom.json"), shot)


def _net_urls(path: Path) -> set[str]:
    """The scheme://host of every URL request in a Chromium net log."""
    from urllib.parse import urlsplit

    try:
        log = json.loads(path.read_text(errors="replace"))
    except json.JSONDecodeError:  # a log cut short when the browser exits: the events written are enough
        text = path.read_text(errors="replace").rstrip().rstrip(",")
        log = json.loads(text + "]}")
    urls = set()
    for ev in log.get("events", []):
        u = (ev.get("params") or {}).get("url")
        if isinstance(u, str) and u.startswith(("http:", "https:", "ws:", "wss:", "ftp:")):
            s = urlsplit(u)
            urls.add(f"{s.scheme}://{s.hostname}")
    return urls


def _not_blank(png: Path) -> float:
    """Share of screenshot pixels that differ from the most common colour (the background)."""
    from matplotlib.image import imread

    img = imread(png)[..., :3]
    flat = (img.reshape(-1, 3) * 255).round().astype(np.uint8)
    _, counts = np.unique(flat, axis=0, return_counts=True)
    return 1 - counts.max() / counts.sum()


needs_chromium = pytest.mark.skipif(chromium() is None, reason="chromium is not installed "
                                    "(scripts/install-services.sh installs Debian's chromium as root)")


@pytest.fixture(scope="module")
def blank_urls(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    """What Chromium itself requests for an empty page (its own services), to tell the page's apart."""
    d = tmp_path_factory.mktemp("blank")
    (d / "blank.html").write_text("<!DOCTYPE html><html><body></body></html>")
    return render(d / "blank.html", d / "run").urls


@needs_chromium
@pytest.mark.slow
def test_report_renders_in_headless_chromium(audit_dir: Path, tmp_path: Path, blank_urls: set[str]):
    r = render(audit_dir / "report.html", tmp_path / "run")
    assert r.console == [], r.console
    assert r.urls <= blank_urls, f"the page requested {r.urls - blank_urls}"
    got = refs(r.dom)
    assert sorted(got.sections) == sorted(["summary", *JUDGES, PANEL_JUDGE, "settings"])
    assert "<script" not in r.dom  # the nasty names stayed text after parsing
    assert _not_blank(r.screenshot) > 0.02


@needs_chromium
@pytest.mark.slow
def test_the_browser_check_sees_errors_and_fetches(tmp_path: Path, blank_urls: set[str]):
    """The harness itself: a page with a script error and a remote image is caught on both counts."""
    bad = tmp_path / "bad.html"
    bad.write_text('<html><body><p>x</p><script>console.error("boom"); notDefined();</script>'
                   '<img src="http://example.invalid/x.png"></body></html>')
    r = render(bad, tmp_path / "run")
    assert any("boom" in ln for ln in r.console) and any("notDefined" in ln for ln in r.console)
    assert "http://example.invalid" in r.urls - blank_urls
    empty = tmp_path / "empty.html"
    empty.write_text("<html><body></body></html>")
    assert _not_blank(render(empty, tmp_path / "run2").screenshot) < 0.001


@needs_chromium
@pytest.mark.slow
def test_leaderboard_report_renders_in_headless_chromium(tmp_path: Path, blank_urls: set[str]):
    """``judgelab leaderboard`` writes report.html beside its tables: the leaderboard (every model
    named), rank flips and the figure render offline, stamped when the verdicts are simulated."""
    from judgelab.cli import main as cli_main

    log = tmp_path / "annotations.json"
    models = ["m<b>1</b>", "m2", "m3"]
    rows = [{"instruction": f"q{i}", "output_1": "base answer " * (1 + i % 3), "generator_1": "base",
             "output_2": f"answer of {m} " * (1 + (i + k) % 4), "generator_2": m,
             "preference": 1.0 + ((i + k) % 3 == 0), "annotator": "weighted_alpaca_eval_gpt4_turbo"}
            for k, m in enumerate(models) for i in range(40)]
    log.write_text(json.dumps(rows))
    assert cli_main(["leaderboard", "--format", "alpaca_eval", str(log), "--out", str(tmp_path / "board")]) == 0
    page = tmp_path / "board" / "report.html"
    r = render(page, tmp_path / "run")
    assert r.console == [], r.console
    assert r.urls <= blank_urls, f"the page requested {r.urls - blank_urls}"
    assert {"leaderboard", "rank-flips"} <= set(refs(r.dom).sections)
    assert "m&lt;b&gt;1&lt;/b&gt;" in page.read_text() and "<b>1</b>" not in page.read_text()
    assert "data:image/png;base64," in page.read_text() and "SIMULATED" not in page.read_text()
    assert _not_blank(r.screenshot) > 0.02
