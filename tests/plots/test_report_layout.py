"""The layout of the two report pages, measured in a real headless Chromium, and the figures under them.

What a reader sees first and how far they scroll: each page opens with its summary section; the
audit of the six LLMBar judges (the shared logs) is at most 4,000 px tall with its details closed;
at a 1,280 px window neither page is wider than the window, with every details section open too
(wide tables scroll inside their own box); every figure has a non-zero natural size, and every
axis matplotlib draws holds data (no empty panel).  Then what the pages say: one sentence per
finding per judge (the card's detected bias rows), one table where the strict and lenient views
agree, accuracy rows never in a bias's colour, no pseudo-judge "0 verdicts" section, and ``--names``
(a ``name,display_name`` CSV or AlpacaEval's published leaderboard) changing the shown names.

The browser measures through a copy of the page with a short script appended (the reports
themselves carry no script); the script writes its measurements into the DOM that
``--dump-dom`` prints.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from judgelab.bias_card.card import METRICS
from judgelab.bias_card.reliability import PANEL_JUDGE
from tests.plots.test_html_report import CHROMIUM_FLAGS, chromium, needs_chromium

WINDOW = 1280
MAX_AUDIT_HEIGHT = 4000
LLMBAR_JUDGES = ["ChatGPT-0301-Vanilla", "ChatGPT-Vanilla", "Falcon-Vanilla", "GPT-4-Vanilla", "LLaMA2-Vanilla",
                 "PaLM2-Vanilla"]
AUDIT_NAMES = {"GPT-4-Vanilla": "GPT-4 (LLMBar Vanilla prompt)", "PaLM2-Vanilla": "PaLM 2 <bison>"}

#: appended to a copy of the page: after load, the measurements closed, then with every details open
PROBE = """<script>
window.addEventListener('load', () => {
  const d = document, root = d.documentElement;
  const closed = {width: root.scrollWidth, height: d.body.scrollHeight,
                  open_details: d.querySelectorAll('details[open]').length,
                  details: d.querySelectorAll('details').length};
  d.querySelectorAll('details').forEach(x => { x.open = true; });
  const boxes = [...d.querySelectorAll('.scroll')].map(b => [b.scrollWidth, b.clientWidth]);
  const opened = {width: root.scrollWidth, boxes: boxes,
                  widest_box: Math.max(0, ...[...d.querySelectorAll('.scroll')].map(b => b.getBoundingClientRect().right))};
  const images = [...d.images].map(i => [i.naturalWidth, i.naturalHeight, i.getBoundingClientRect().width]);
  const svgs = [...d.querySelectorAll('svg')].map(s => [s.getBoundingClientRect().width, s.getBoundingClientRect().height]);
  const sections = [...d.querySelectorAll('main > section')].map(s => s.dataset.key);
  const firstChild = d.querySelector('main > section, main > nav');
  const out = {closed, opened, images, svgs, sections, first: firstChild ? firstChild.dataset.key || firstChild.tagName : null,
               inner_width: window.innerWidth};
  const pre = d.createElement('pre'); pre.id = 'layout-probe'; pre.textContent = JSON.stringify(out);
  d.body.appendChild(pre);
});
</script>"""


def measure(page: Path, work: Path) -> dict:
    """The page's layout in headless Chromium at a 1,280 px wide window (see :data:`PROBE`)."""
    work.mkdir(parents=True, exist_ok=True)
    probe = work / "probe.html"
    text = page.read_text(encoding="utf-8")
    assert text.count("</body>") == 1
    probe.write_text(text.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    proc = subprocess.run([chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={work / 'profile'}",
                           f"--window-size={WINDOW},900", "--virtual-time-budget=10000", "--dump-dom",
                           probe.resolve().as_uri()], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    m = re.search(r'<pre id="layout-probe">(.*?)</pre>', proc.stdout, flags=re.S)
    assert m, "the probe did not run (no measurements in the DOM)"
    import html

    return json.loads(html.unescape(m.group(1)))


def check_layout(got: dict) -> None:
    """What both pages promise at a 1,280 px window."""
    assert got["inner_width"] == WINDOW
    assert got["first"] == "summary" and got["sections"][0] == "summary"
    assert got["closed"]["open_details"] == 0 and got["closed"]["details"] >= 1  # details closed by default
    assert got["closed"]["width"] <= WINDOW, got["closed"]
    assert got["opened"]["width"] <= WINDOW, got["opened"]  # every table open: still no page scroll
    assert got["opened"]["widest_box"] <= WINDOW
    assert got["images"] and all(w > 0 and h > 0 and shown > 0 for w, h, shown in got["images"]), got["images"]
    assert all(w > 0 and h > 0 for w, h in got["svgs"])


# ---- the audit of the six LLMBar judges ---------------------------------------------------------------


@pytest.fixture(scope="module")
def llmbar_audit(data_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``judgelab audit --format llmbar`` of the six LLMBar Natural judges, with ``--names`` for two."""
    from judgelab.cli import main as cli_main

    files = sorted((data_root / "llmbar_judge_outputs/Natural/evaluators").glob("*/Vanilla/result.json"))
    assert len(files) == 6
    tmp = tmp_path_factory.mktemp("llmbar")
    names = tmp / "names.csv"
    pd.DataFrame({"name": list(AUDIT_NAMES), "display_name": list(AUDIT_NAMES.values())}).to_csv(names, index=False)
    out = tmp / "audit"
    assert cli_main(["audit", "--format", "llmbar", *map(str, files), "--out", str(out), "--names", str(names),
                     "--resamples", "200"]) == 0
    return out


def _section(text: str, key: str) -> str:
    m = re.search(rf'<section id="[^"]*" data-key="{re.escape(key)}"[^>]*>(.*?)</section>', text, flags=re.S)
    assert m, key
    return m.group(1)


@needs_chromium
@pytest.mark.shared_data
@pytest.mark.slow
def test_the_llmbar_audit_page_fits_the_window_and_4000_px(llmbar_audit: Path, tmp_path: Path):
    got = measure(llmbar_audit / "report.html", tmp_path)
    check_layout(got)
    assert got["closed"]["height"] <= MAX_AUDIT_HEIGHT, got["closed"]
    assert got["sections"] == ["summary", *LLMBAR_JUDGES, PANEL_JUDGE, "settings"]
    assert len(got["images"]) == 1  # the one figure, in the summary
    assert got["opened"]["boxes"]  # the card's tables, measured open (they wrap their long notes)


@pytest.mark.shared_data
def test_the_llmbar_summary_says_each_finding_once(llmbar_audit: Path):
    """Per judge, one sentence per bias row the card calls detected (lenient view), counted from
    bias_card.csv; accuracy stays out of the findings and out of the bias colour."""
    text = (llmbar_audit / "report.html").read_text(encoding="utf-8")
    card = pd.read_csv(llmbar_audit / "bias_card.csv", keep_default_na=False)
    summary = _section(text, "summary")
    assert text.index('data-key="summary"') < text.index("<nav>")  # the summary comes before everything else
    blocks = dict(re.findall(r"<h3>([^<]*)</h3><ul>(.*?)</ul>", summary, flags=re.S))
    lenient = card[card["view"] == "lenient"]
    for judge in LLMBAR_JUDGES:
        shown = AUDIT_NAMES.get(judge, judge)
        title = next(t for t in blocks if t.startswith(_html(shown)))
        items = re.findall(r"<li>(.*?)</li>", blocks[title])
        rows = lenient[(lenient["judge"] == judge) & (lenient["status"] == "detected")]
        bias = [m for m in rows["metric"] if METRICS[m].kind == "bias"]
        said = [i.split(" detected")[0] for i in items if " detected (lenient view)" in i]
        assert said == bias, (judge, said, bias)
        if not bias:
            assert any(i.startswith("No bias detected") for i in items)
        assert sum(i.startswith("Accuracy against gold (accuracy_average, not a bias)") for i in items) == 1
    # accuracy rows are detected (above chance) on every judge, but never painted as a bias
    assert (lenient[lenient["metric"] == "accuracy_AB"]["status"] == "detected").all()
    assert '<td>accuracy_AB</td><td class="st-tested">detected</td>' in text
    assert '<td>accuracy_AB</td><td class="st-detected">' not in text
    assert '<td>position_preference</td><td class="st-detected">detected</td>' in text
    # the between-judge rows are not a pseudo-judge with no verdicts
    assert not re.search(r"[^0-9]0 verdicts", text) and "family panel" not in text
    assert "<h2>Agreement between judges</h2>" in _section(text, PANEL_JUDGE)


@pytest.mark.shared_data
def test_agreeing_views_give_one_table_and_differing_views_two(llmbar_audit: Path):
    """Whether a judge's strict and lenient rows are the same is read from bias_card.csv here, on
    the shown columns; the page's table count follows it."""
    text = (llmbar_audit / "report.html").read_text(encoding="utf-8")
    card = pd.read_csv(llmbar_audit / "bias_card.csv", keep_default_na=False)
    cols = ["metric", "status", "estimate", "ci_low", "ci_high", "null_value", "n", "n_items", "parsed_share", "test",
            "p_value", "p_adjusted", "mde", "reason", "note"]
    agree = {}
    for judge in LLMBAR_JUDGES:
        g = card[card["judge"] == judge]
        lenient = g[g["view"] == "lenient"][cols].reset_index(drop=True)
        strict = g[g["view"] == "strict"][cols].reset_index(drop=True)
        agree[judge] = lenient.equals(strict)
        sec = _section(text, judge)
        if agree[judge]:
            assert sec.count("<table>") == 1 and "(lenient and strict views agree)" in sec
            assert "<th>view</th>" not in sec
        else:
            assert sec.count("<table>") == 2 and "Card rows, lenient view" in sec and "Card rows, strict view" in sec
    assert any(agree.values())  # the LLMBar logs hold agreeing judges: the one-table case is exercised


def test_view_tables_of_hand_made_rows():
    from judgelab.bias_card.html import view_tables
    from tests.bias_card.test_report import base, card

    same = card(base() + base("strict"))
    (one,) = view_tables(same)
    assert one.title == "Card rows (lenient and strict views agree)" and "view" not in one.frame.columns
    assert len(one.frame) == len(METRICS)
    strict = base("strict")
    strict[0]["estimate"] = 0.5  # one number moves in the strict view
    two = view_tables(card(strict + base()))
    assert [t.title for t in two] == ["Card rows, lenient view", "Card rows, strict view"]  # lenient first
    assert two[1].frame["estimate"].iloc[0] == 0.5
    (single,) = view_tables(card(base("strict")))
    assert single.title == "Card rows (strict view)"


def _html(s: str) -> str:
    import html

    return html.escape(s, quote=True)


@pytest.mark.shared_data
def test_names_change_the_shown_judges(llmbar_audit: Path):
    text = (llmbar_audit / "report.html").read_text(encoding="utf-8")
    for name, shown in AUDIT_NAMES.items():
        # the display name, then the name of the logs, in the summary and the judge's section title
        assert f"<h3>{_html(f'{shown} ({name})')} (200 verdicts)</h3>" in _section(text, "summary")
        assert f"<h2>{_html(f'{shown} ({name})')} (family " in _section(text, name)
    assert "PaLM 2 &lt;bison&gt;" in text and "PaLM 2 <bison>" not in text
    # a judge the file does not list keeps its name
    assert "<h3>Falcon-Vanilla (200 verdicts)</h3>" in _section(text, "summary")
    # the tables keep the names of the logs
    assert set(pd.read_csv(llmbar_audit / "bias_card.csv")["judge"]) == {*LLMBAR_JUDGES, PANEL_JUDGE}


# ---- figures: every axis drawn holds data -------------------------------------------------------------


def _axes_with_data(fig) -> list[bool]:
    """Per axis: whether it holds at least one drawn point with finite coordinates."""
    out = []
    for ax in fig.axes:
        pts = [np.asarray(ln.get_xydata(), float) for ln in ax.lines if ln.get_marker() not in ("None", None, "")]
        out.append(any(len(p) and np.isfinite(p).all(axis=1).any() for p in pts))
    return out


@pytest.mark.shared_data
def test_every_panel_of_the_llmbar_card_figure_has_data(llmbar_audit: Path, monkeypatch, tmp_path):
    import importlib

    from judgelab.bias_card.report import card_figure, drawn_metrics

    stamp_mod = importlib.import_module("judgelab.plots.stamp")
    got: dict = {}
    monkeypatch.setattr(stamp_mod, "save_figure", lambda fig, path: got.update(fig=fig))
    card = pd.read_csv(llmbar_audit / "bias_card.csv")
    card_figure(card, tmp_path / "f.png", title="llmbar", names=AUDIT_NAMES)
    fig = got["fig"]
    assert fig.axes and all(_axes_with_data(fig)), [a.get_title() for a in fig.axes]
    # the panels are exactly the judge metrics some judge has an estimate of (independently from the CSV)
    lenient = card[(card["view"] == "lenient") & (card["judge"] != PANEL_JUDGE)]
    with_data = set(lenient.loc[lenient["estimate"].notna(), "metric"])
    assert [a.get_title() for a in fig.axes] == [m for m in METRICS if m in with_data] == drawn_metrics(card)
    assert {"self_preference", "ppi_win_rate", "repetition_consistency"}.isdisjoint(with_data)  # the empty ones
    # judges named by their display names; accuracy above chance is black, a detected bias blue
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert "GPT-4 (LLMBar Vanilla prompt)" in labels and "Falcon-Vanilla" in labels and PANEL_JUDGE not in labels
    from judgelab.bias_card.report import STYLE

    acc = fig.axes[[a.get_title() for a in fig.axes].index("accuracy_AB")]
    assert {ln.get_color() for ln in acc.lines if ln.get_marker() == "o"} == {STYLE.accuracy}


# ---- the leaderboard ------------------------------------------------------------------------------------


ALPACA_LEADERBOARD = "alpaca_eval/leaderboards/weighted_alpaca_eval_gpt4_turbo_leaderboard.csv"


@pytest.mark.shared_data
def test_alpaca_evals_published_leaderboard_reads_as_display_names(data_root: Path):
    """The real file: ``name`` is the display name, the results folder is in the ``samples`` link."""
    from judgelab.verdict_import.names import read_display_names

    names = read_display_names(data_root / ALPACA_LEADERBOARD)
    raw = pd.read_csv(data_root / ALPACA_LEADERBOARD)
    with_link = raw["samples"].fillna("").str.contains("/results/")
    assert len(names) == raw.loc[with_link, "samples"].nunique()  # one entry per results folder
    assert names["claude-2.1"] == "Claude 2.1" and names["gpt4_gamed"] == "GPT-4 (Adversarial)"
    assert names["vicuna-7b"] == "Vicuna 7B" and names["gpt4_1106_preview"] == "GPT-4 Preview (11/06)"
    assert names["NullModel"] == "NullModel (adversarial)"  # listed twice in the file, the same both times
    # of its two rows, only the one linking a results folder names it
    assert [k for k, v in names.items() if v == "GPT 3.5 Turbo (06/13)"] == ["gpt-3.5-turbo-0613"]
    assert "" not in names


def _alpaca_log(root: Path, models: list[str], n: int = 30) -> Path:
    rng = np.random.default_rng(1)
    for k, m in enumerate(models):
        rows = [{"instruction": f"q{i}", "output_1": "base answer " * (1 + i % 4), "generator_1": "gpt4_1106_preview",
                 "output_2": f"{m} answer " * (1 + (i * 7 + k) % 6), "generator_2": m, "dataset": "d",
                 "annotator": "ann", "preference": 1 + float(rng.random() < 0.3 + 0.1 * k), "raw_completion": None}
                for i in range(n)]
        p = root / m / "ann" / "annotations.json"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(rows), encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def board(data_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A leaderboard of four AlpacaEval-shaped logs, three of them published models, with
    ``--names`` AlpacaEval's own leaderboard file."""
    from judgelab.cli import main as cli_main

    tmp = tmp_path_factory.mktemp("board")
    logs = _alpaca_log(tmp / "results", ["claude-2.1", "gpt4_gamed", "vicuna-7b", "my-own-model"])
    out = tmp / "board"
    assert cli_main(["leaderboard", "--format", "alpaca_eval", str(logs), "--out", str(out), "--resamples", "2",
                     "--names", str(data_root / ALPACA_LEADERBOARD)]) == 0
    return out


@needs_chromium
@pytest.mark.shared_data
@pytest.mark.slow
def test_the_leaderboard_page_fits_the_window(board: Path, tmp_path: Path):
    got = measure(board / "report.html", tmp_path)
    check_layout(got)
    assert got["sections"][:2] == ["summary", "leaderboard"]
    # leaderboard.csv's 20-odd columns (and the logs' paths) are wider than the window: they scroll in their box
    assert any(sw > cw for sw, cw in got["opened"]["boxes"])


@pytest.mark.shared_data
def test_names_change_the_shown_models(board: Path):
    text = (board / "report.html").read_text(encoding="utf-8")
    summary = _section(text, "summary")
    for shown in ("Claude 2.1", "GPT-4 (Adversarial)", "Vicuna 7B"):
        assert f"<td>{_html(shown)}</td>" in summary
    assert "<td>my-own-model</td>" in summary  # not in the file: keeps its name
    assert "<td>claude-2.1</td>" not in summary
    # the full table keeps the name of the logs and shows the display name beside it
    full = _section(text, "leaderboard")
    assert "<th>model</th><th>display_name</th>" in full
    assert "<td>claude-2.1</td><td>Claude 2.1</td>" in full and "<td>my-own-model</td><td>my-own-model</td>" in full
    assert "display_name" not in pd.read_csv(board / "leaderboard.csv").columns  # the CSV stays as it was


@pytest.mark.parametrize("command", ["audit", "leaderboard"])
@pytest.mark.parametrize("content", ["model,shown\na,b\n", "name,display_name\na,\n",
                                     "name,display_name\na,b\na,c\n", None])
def test_a_malformed_names_file_is_one_line_naming_it(command, content, tmp_path, capsys):
    from judgelab.cli import main as cli_main

    names = tmp_path / "names.csv"
    if content is not None:
        names.write_text(content)
    log = tmp_path / "log.json"  # never read: the names file is refused first
    log.write_text("[]")
    rc = cli_main([command, "--format", "alpaca_eval", str(log), "--out", str(tmp_path / "out"), "--names",
                   str(names)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and err[0].startswith(f"judgelab: error: {names}: "), err
    assert not (tmp_path / "out").exists()


def test_labels_of_a_dense_cluster_never_overlap():
    """place_labels on twelve points a few pixels apart: no two labels and no label and another
    point overlap; every name is either drawn or reported dropped."""
    import matplotlib.pyplot as plt

    from judgelab.board.figure import POINT_RADIUS_PX, place_labels

    fig, ax = plt.subplots(figsize=(5, 4.8))
    ax.set_xlim(0, 100)
    ax.set_ylim(0, 100)
    xs = 40 + np.arange(12) % 4 * 1.5
    ys = 40 + np.arange(12) // 4 * 1.5
    texts = [f"model-{i:02d}" for i in range(12)]
    placed, dropped = place_labels(ax, xs, ys, texts)
    assert sorted([a.get_text() for a in placed] + dropped) == texts
    assert len(placed) >= 4 and dropped  # a cluster this tight cannot name everyone
    r = fig.canvas.get_renderer()
    boxes = [a.get_window_extent(r) for a in placed]
    for i, b in enumerate(boxes):
        assert not any(b.overlaps(c) for c in boxes[i + 1:])
    pts = ax.transData.transform(np.column_stack([xs, ys]))
    for a, b in zip(placed, boxes, strict=True):
        own = texts.index(a.get_text())
        for k, (px, py) in enumerate(pts):
            if k != own:
                assert not (b.x0 < px + POINT_RADIUS_PX and px - POINT_RADIUS_PX < b.x1
                            and b.y0 < py + POINT_RADIUS_PX and py - POINT_RADIUS_PX < b.y1)
    assert set(ax.texts) == set(placed)  # a label that found no place is removed, not left behind
    plt.close(fig)


@pytest.mark.shared_data
def test_every_panel_of_the_leaderboard_figure_has_data_and_labels_do_not_overlap(board: Path, monkeypatch,
                                                                                   tmp_path):
    import matplotlib.pyplot as plt

    from judgelab.board import figure as F

    figs = []
    real = plt.subplots

    def subplots(*a, **k):
        fig, axes = real(*a, **k)
        figs.append(fig)
        return fig, axes

    monkeypatch.setattr(F.plt, "subplots", subplots)
    monkeypatch.setattr(F.plt, "close", lambda fig=None: None)
    table = pd.read_csv(board / "leaderboard.csv")
    table["bias_aware"] = np.nan  # a correction without a number: no panel for it
    F.leaderboard_figure(table, tmp_path / "lb.png", title="t", simulated=False,
                         names={"claude-2.1": "Claude 2.1"})
    (fig,) = figs
    assert len(fig.axes) == 2 and all(_axes_with_data(fig))
    for ax in fig.axes:
        boxes = [t.get_window_extent(fig.canvas.get_renderer()) for t in ax.texts]
        assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
        assert "Claude 2.1" in [t.get_text() for t in ax.texts]
    table[["lc_win_rate", "style_controlled"]] = np.nan  # no correction at all: one panel of raw win rates
    F.leaderboard_figure(table, tmp_path / "lb2.png", title="t", simulated=False)
    (ax,) = figs[1].axes
    assert all(_axes_with_data(figs[1])) and ax.get_xlabel() == "raw win rate (%)"
    for f in figs:
        plt.close(f)


def test_a_collapsed_section_is_a_closed_details_and_a_summary_leads_the_page():
    from judgelab.plots.html_report import Bullets, Page, Section, Table, render_page

    frame = pd.DataFrame({"metric": ["accuracy_AB", "position_preference"], "status": ["detected", "detected"]})
    page = Page(title="T", sections=[
        Section("Summary", key="summary", bullets=[Bullets("judge <a>", ["one finding."])], summary=True),
        Section("Details", key="details", collapsed=True, lead="open me",
                tables=[Table("rows", frame, status_class=["st-tested", None])])])
    text = render_page(page)
    assert text.index('data-key="summary" class="summary"') < text.index("<nav>") < text.index('data-key="details"')
    assert "<h3>judge &lt;a&gt;</h3><ul><li>one finding.</li></ul>" in text
    assert '<details><summary><h2>Details</h2><span class="lead">open me</span></summary>' in text
    assert "<details open" not in text
    # the override colours the first row's status neutrally; the second keeps its status's class
    assert '<td>accuracy_AB</td><td class="st-tested">detected</td>' in text
    assert '<td>position_preference</td><td class="st-detected">detected</td>' in text
    assert '<div class="scroll"><table>' in text  # every table in its own scrolling box
    with pytest.raises(ValueError, match="1 status classes for 2 rows"):
        render_page(Page(title="T", sections=[Section("s", tables=[Table("rows", frame, status_class=[None])])]))
