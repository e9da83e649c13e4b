"""Every shell command in README.md, and in the command headers of the shipped config files, is run.

The README is a contract: a command it shows must work as written.  This file collects every
fenced ``bash``/``sh``/``shell``/``console`` block of README.md (``\\`` continuations joined,
comment lines and ``$ `` prompts dropped; a trailing ``# ...`` is the command's note) and every
``#   snakemake ...`` / ``#   judgelab ...`` command in the header comments of the example configs
(``config/examples/*.yaml``, ``config/*-own-data.yaml``).
A header command that is also in README.md (whitespace aside) runs once, as the README's.

How each command runs (a scratch copy of the workflow per command, ``.venv`` linked in, so the
checkout's ``results/`` is never touched; ``HF_HUB_OFFLINE=1`` and ``JUDGELAB_DATA`` set):

* ``snakemake`` / ``.venv/bin/snakemake``: exactly as written with ``-n`` added after the program
  (a dry run plans the whole DAG the command asks for: config merge, roles, schema, targets).
  The real own-data runs are measured once and their times are written beside them in README.md;
  running them here would cost minutes to hours each.
* ``judgelab``: exactly as written.  Where a command names the reader's own files (an AlpacaEval
  ``annotations.json``, Arena-Hard judgments, a mapped CSV log, a pairs file) the test writes
  stand-ins in the published layouts first (:data:`STAND_INS`; the layouts are those of
  ``tests/test_verdict_import.py`` and README's own mapping example).
* the README's test command (``... pytest ...``) is what ``.ci/run`` runs, character for character;
  ``bash scripts/install.sh`` / ``bash scripts/install-services.sh`` before ``&&`` are the
  install steps (run by ``.ci/run`` itself), not run here.

Markers, written in the README itself:

* ``# needs OPENAI_API_KEY`` (or several variables): the command runs with those variables unset
  and must fail with the backend's message ``environment variable <VAR> is not set`` (in its
  output or in a job log) and no other error.  Keys are never used by the test, even when set.
* ``# needs conda`` / ``# needs vllm``: without them on this machine the command must fail with
  the message that names them (snakemake's "Is conda installed", judgelab's "the vllm backend
  needs vllm"); where they exist the command must succeed.
* ``# not run by the test: <reason>`` after a command, or ``<!-- not run by the test: <reason> -->``
  on the line before a fence for the whole block: installs, benchmarks, mutation runs.  The
  reason must be given.

A command that fits none of these fails :func:`test_every_command_is_classified`, so a new README
command cannot go untested silently.
"""

from __future__ import annotations

import csv
import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REPO

README = REPO / "README.md"
SHELL_LANGS = {"bash", "sh", "shell", "console"}
SNAKEMAKE = {"snakemake", ".venv/bin/snakemake"}
JUDGELAB = {"judgelab", ".venv/bin/judgelab"}
INSTALL_STEPS = {"bash scripts/install.sh", "bash scripts/install-services.sh"}
NOT_RUN = re.compile(r"not run by the test:\s*(?P<reason>.*)")
NEEDS = re.compile(r"\bneeds\s+(?P<what>conda|vllm|[A-Z][A-Z0-9_]*(?:\s*,\s*[A-Z][A-Z0-9_]*)*)")
WORKFLOW_PARTS = ["Snakefile", "rules", "config", "workflow_scripts", "report", "envs", "judgelab", "data",
                  "pyproject.toml", "profiles", "scripts", "benchmarks"]
MISSING_KEY = "environment variable {} is not set"
MISSING = {"conda": "Is conda installed and accessible?", "vllm": "the vllm backend needs vllm"}


@dataclass(frozen=True)
class Command:
    """One command as written: where (``README.md:LINE`` or a config file), its text, its note."""

    where: str
    text: str
    note: str
    block_note: str = ""    # the ``<!-- ... -->`` line right before its fence
    yaml_above: str = ""    # the YAML block right before its fence (a config file the text names)

    @property
    def not_run_reason(self) -> str | None:
        for note in (self.note, self.block_note):
            m = NOT_RUN.search(note)
            if m:
                return m.group("reason").strip().rstrip("->").strip()
        return None

    @property
    def needs(self) -> list[str]:
        m = NEEDS.search(self.note)
        return [w.strip() for w in m.group("what").split(",")] if m else []

    @property
    def segments(self) -> list[str]:
        """The ``&&``-joined parts, install steps left out."""
        return [s.strip() for s in self.text.split("&&") if s.strip() not in INSTALL_STEPS]


def _split_note(line: str) -> tuple[str, str]:
    """``cmd  # note`` -> (cmd, note); a ``#`` inside quotes is part of the command."""
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip(), line[i + 1:].strip()
    return line.rstrip(), ""


def readme_commands(text: str | None = None, where: str = "README.md") -> list[Command]:
    """The commands of every shell block of a Markdown text, in order."""
    lines = (README.read_text(encoding="utf-8") if text is None else text).splitlines()
    out: list[Command] = []
    i, last_yaml = 0, ""
    while i < len(lines):
        m = re.match(r"^```(\w*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        lang, start = m.group(1), i
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        body = lines[start + 1:j]
        if lang == "yaml":
            last_yaml = "\n".join(body) + "\n"
        elif lang in SHELL_LANGS:
            before = lines[start - 1].strip() if start > 0 else ""
            block_note = before[4:-3].strip() if before.startswith("<!--") and before.endswith("-->") else ""
            k = 0
            while k < len(body):
                first = k
                raw = body[k].strip()
                if raw.startswith("$ "):
                    raw = raw[2:]
                if not raw or raw.startswith("#"):
                    k += 1
                    continue
                parts, notes = [], []
                while True:
                    cmd, note = _split_note(raw)
                    if note:
                        notes.append(note)
                    cont = cmd.endswith("\\")
                    parts.append(cmd[:-1].strip() if cont else cmd.strip())
                    if not cont or k + 1 >= len(body):
                        break
                    k += 1
                    raw = body[k].strip()
                out.append(Command(f"{where}:{start + 2 + first}", " ".join(parts), "; ".join(notes),
                                   block_note, last_yaml))
                k += 1
        i = j + 1
    return out


def config_header_commands() -> list[Command]:
    """``#   snakemake ...`` / ``#   judgelab ...`` commands in the comments of the shipped config files."""
    out = []
    for path in sorted([*(REPO / "config" / "examples").glob("*.yaml"), *(REPO / "config").glob("*-own-data.yaml")]):
        lines = path.read_text(encoding="utf-8").splitlines()
        k = 0
        while k < len(lines):
            m = re.match(r"^#\s{2,}((?:\.venv/bin/)?(?:snakemake\s+-|judgelab\s+[a-z-]+(?:\s+-|\s*$)).*)$", lines[k])
            if not m:
                k += 1
                continue
            first, parts, raw = k, [], m.group(1)
            while True:
                cont = raw.rstrip().endswith("\\")
                parts.append(raw.rstrip()[:-1].strip() if cont else raw.strip())
                if not cont or k + 1 >= len(lines):
                    break
                k += 1
                raw = lines[k].lstrip("#").strip()
            out.append(Command(f"{path.relative_to(REPO)}:{first + 1}", " ".join(parts), ""))
            k += 1
    return out


def _norm(text: str) -> str:
    return " ".join(text.split())


def all_commands() -> list[Command]:
    readme = readme_commands()
    known = {_norm(c.text) for c in readme}
    return readme + [c for c in config_header_commands() if _norm(c.text) not in known]


def ci_command() -> str:
    """The command ``.ci/run`` runs (its last line)."""
    return (REPO / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()[-1].strip()


def classify(c: Command) -> str:
    """``not_run``, ``ci``, ``needs``, ``snakemake``, ``judgelab``; ValueError when none fits."""
    if c.not_run_reason is not None:
        return "not_run"
    if "pytest" in c.text:
        return "ci"
    progs = {shlex.split(s)[0] for s in c.segments}
    if not c.segments or not progs <= SNAKEMAKE | JUDGELAB or len(c.segments) != 1:
        raise ValueError(f"{c.where}: cannot classify {c.text!r}: not snakemake/judgelab, no marker "
                         f"('# needs VAR', '# not run by the test: reason')")
    if c.needs:
        return "needs"
    return "snakemake" if progs <= SNAKEMAKE else "judgelab"


def kind(c: Command) -> str:
    """:func:`classify`, or ``unclassified`` (which :func:`test_every_command_is_classified` reports)."""
    try:
        return classify(c)
    except ValueError:
        return "unclassified"


COMMANDS = all_commands()


def _id(c: Command) -> str:
    return c.where


# ---------------------------------------------------------------------------------------------
# fast: parsing and classification


def test_parser_joins_continuations_and_keeps_notes():
    text = ("intro\n<!-- not run by the test: demo -->\n```bash\n# a comment\n$ snakemake --cores 2 \\\n"
            "    -- a.csv b.csv   # needs OPENAI_API_KEY, GEMINI_API_KEY\njudgelab backends  # 'x # y'\n```\n"
            "```yaml\nk: v\n```\n```bash\njudgelab x --configfile f.yaml\n```\n")
    cs = readme_commands(text, "T.md")
    assert [c.text for c in cs] == ["snakemake --cores 2 -- a.csv b.csv", "judgelab backends",
                                    "judgelab x --configfile f.yaml"]
    assert cs[0].where == "T.md:5" and cs[0].needs == ["OPENAI_API_KEY", "GEMINI_API_KEY"]
    assert cs[0].not_run_reason == "demo" and cs[2].not_run_reason is None
    assert cs[2].yaml_above == "k: v\n" and cs[1].note == "'x # y'"
    assert _split_note("judgelab a 'b # c' # d") == ("judgelab a 'b # c'", "d")


def test_every_command_is_classified():
    assert len(COMMANDS) > 20
    kinds = {c.where: classify(c) for c in COMMANDS}  # raises, naming the command, when one fits nothing
    assert "snakemake" in kinds.values() and "judgelab" in kinds.values() and "needs" in kinds.values()
    with pytest.raises(ValueError, match="cannot classify"):
        classify(Command("X:1", "python -c 'print(1)'", ""))


def test_not_run_markers_give_a_reason_and_stay_few():
    skipped = [c for c in COMMANDS if c.not_run_reason is not None]
    for c in skipped:
        assert len(c.not_run_reason) > 10, f"{c.where}: 'not run by the test' needs a reason"
    # installs, benchmarks, mutation runs and templates with placeholders only: everything else is run
    assert len(skipped) < 20, [c.where for c in skipped]
    for c in skipped:
        assert re.search(r"install|benchmark|mutation|minutes|hours|placeholder", c.not_run_reason), (
            c.where, c.not_run_reason)


def test_readme_test_command_is_what_ci_runs():
    ci = [c for c in COMMANDS if kind(c) == "ci"]
    assert len(ci) == 1, [c.where for c in ci]
    assert ci[0].text == ci_command()
    for step in INSTALL_STEPS:
        assert (REPO / step.split()[1]).is_file()


def test_expected_messages_are_the_ones_the_code_prints():
    # the README markers promise these messages; they must be the code's own wording
    src = (REPO / "judgelab" / "judges" / "openai_backend.py").read_text(encoding="utf-8")
    assert MISSING_KEY.format("{key_env}") in src
    assert MISSING["vllm"] in (REPO / "judgelab" / "judges" / "vllm_backend.py").read_text(encoding="utf-8")


def test_snakemake_targets_follow_a_double_dash_after_configfile():
    # snakemake 9 reads every word after --configfile (and --resources, --config) as more of them
    for c in COMMANDS:
        if kind(c) not in ("snakemake", "needs") or shlex.split(c.text)[0] not in SNAKEMAKE:
            continue
        words = shlex.split(c.text)
        for flag in ("--configfile", "--resources", "--config"):
            if flag not in words:
                continue
            rest = words[words.index(flag) + 1:]
            vals = rest[:next((i for i, w in enumerate(rest) if w.startswith("-")), len(rest))]
            assert all(re.search(r"\.ya?ml$|=", v) for v in vals), f"{c.where}: {flag} swallows {vals}"


def test_config_headers_name_only_shipped_config_files():
    for c in config_header_commands():
        words = shlex.split(c.text)
        for w in words:
            if re.search(r"\.ya?ml$", w) and not w.startswith("-"):
                assert (REPO / w).is_file(), f"{c.where}: {w} does not exist"


# ---------------------------------------------------------------------------------------------
# slow: running them


def _canon_stand_ins():
    from tests import test_verdict_import as vi

    return vi


def _arena_hard(wd: Path) -> None:
    vi = _canon_stand_ins()
    src = wd / "arena_hard"
    src.mkdir(parents=True, exist_ok=True)
    files, _ = vi.fixture_arena_hard(src)  # arena_hard/model_answer/, arena_hard/question.jsonl
    dest = wd / "model_judgment" / "gpt-4-1106-preview"
    dest.mkdir(parents=True)
    shutil.move(str(files[0]), dest / files[0].name)


def _arena_hard_v2(wd: Path) -> None:
    """The real published v2.0 records of ``tests/fixtures/verdict_logs/arena_hard_v2/`` in the repository layout
    README's command names (``data/arena-hard-v2.0/{model_judgment/<judge>/, model_answer/, question.jsonl}``)."""
    src = REPO / "tests" / "fixtures" / "verdict_logs" / "arena_hard_v2"
    dest = wd / "data" / "arena-hard-v2.0"
    shutil.copytree(src / "model_answer", dest / "model_answer")
    shutil.copy2(src / "question.jsonl", dest / "question.jsonl")
    shutil.copytree(src / "model_judgment" / "gemini-2.5-flash", dest / "model_judgment" / "gpt-4.1")


def _alpaca_eval(wd: Path) -> None:
    _canon_stand_ins().fixture_alpaca_eval(wd)  # annotations.json


def _mapped_log(wd: Path) -> None:
    """README's mapping example (the YAML block with ``judge: {const: my-judge}``) and a CSV in its layout."""
    blocks = re.findall(r"```yaml\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    mapping = next(b for b in blocks if b.startswith("judge: {const: my-judge}"))
    (wd / "my_log.yaml").write_text(mapping)
    (wd / "logs").mkdir()
    with (wd / "logs" / "run1.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["qid", "prompt", "first", "second", "swapped", "output", "truth"])
        for i in range(12):
            short, long_ = f"Answer {i}.", f"A longer answer to question {i}, with detail. " * 3
            good_first = i % 2 == 0
            for swapped in ("false", "true"):
                first, second = (short, long_) if swapped == "false" else (long_, short)
                truth = "first_is_better" if (good_first == (swapped == "false")) else "second_is_better"
                w.writerow([f"q{i}", f"Question {i}?", first, second, swapped, "[[A]]" if i % 3 else "[[B]]", truth])


def _pairs(wd: Path) -> None:
    shutil.copy(REPO / "data" / "strategies" / "example_pairs.jsonl", wd / "my_pairs.jsonl")


def _cache(wd: Path) -> None:
    """The call cache a run leaves in ``results/cache/``: README's ``judgelab judge`` line, run first."""
    _pairs(wd)
    proc = subprocess.run(["judgelab", "judge", "--judge", "sim-gpt-4o", "--pairs", "my_pairs.jsonl", "--out",
                           "verdicts.csv"], cwd=wd, env=_env(), capture_output=True, text=True)
    assert proc.returncode == 0 and (wd / "results" / "cache" / "calls.sqlite").exists(), proc.stderr[-2000:]


# the reader's own files that README commands name, or what an earlier run leaves -> a stand-in
# in the published layout
STAND_INS = {"annotations.json": _alpaca_eval, "arena-hard-v2.0/": _arena_hard_v2,
             "model_judgment/": _arena_hard, "my_log.yaml": _mapped_log,
             "my_pairs.jsonl": _pairs, "judgelab cache-stats": _cache}


def _scratch(tmp_path: Path, c: Command) -> Path:
    wd = tmp_path / "wf"
    wd.mkdir()
    for part in WORKFLOW_PARTS:
        src = REPO / part
        if src.is_dir():
            shutil.copytree(src, wd / part, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        elif src.exists():
            shutil.copy2(src, wd / part)
    os.symlink(REPO / ".venv" if (REPO / ".venv").exists() else Path(sys.prefix), wd / ".venv")
    for name, write in STAND_INS.items():
        if name in c.text:
            write(wd)
    for w in shlex.split(c.text):  # a config file the README shows as the YAML block right above
        if re.search(r"^[\w.-]+\.ya?ml$", w) and not (wd / w).exists() and c.yaml_above:
            (wd / w).write_text(c.yaml_above)
    return wd


def _env(drop: tuple[str, ...] = ()) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in drop}
    bindir = str(Path(sys.executable).parent)
    env.update(HF_HUB_OFFLINE="1", JUDGELAB_PROGRESS="0", PATH=bindir + os.pathsep + env.get("PATH", ""))
    env.setdefault("JUDGELAB_DATA", str(REPO.parent / "shared" / "data"))
    return env


def _run(wd: Path, text: str, env: dict[str, str]) -> tuple[int, str]:
    proc = subprocess.run(["bash", "-c", text], cwd=wd, env=env, capture_output=True, text=True)
    logs = "".join(p.read_text(errors="replace") for p in sorted((wd / "results" / "logs").rglob("*.log"))
                   ) if (wd / "results" / "logs").is_dir() else ""
    return proc.returncode, proc.stdout + proc.stderr + logs


def _dry(text: str) -> str:
    prog, _, rest = text.partition(" ")
    return f"{prog} -n {rest}"


def _tail(out: str) -> str:
    return out[-4000:]


@pytest.mark.slow
@pytest.mark.parametrize("c", [c for c in COMMANDS if kind(c) in ("snakemake", "judgelab")], ids=_id)
def test_command_runs_as_written(c: Command, tmp_path: Path, data_root: Path):
    wd = _scratch(tmp_path, c)
    text = c.segments[0]
    rc, out = _run(wd, _dry(text) if classify(c) == "snakemake" else text, _env())
    assert rc == 0, f"{c.where}: {text}\n{_tail(out)}"
    if classify(c) == "snakemake":
        # a plan (dry run), or --unlock's own answer (it plans nothing; -n leaves it a no-op elsewhere)
        expected = (("Unlocked working directory.",) if "--unlock" in shlex.split(text)
                    else ("This was a dry-run", "Nothing to be done"))
        assert any(m in out for m in expected), _tail(out)


@pytest.mark.slow
@pytest.mark.parametrize("c", [c for c in COMMANDS if kind(c) == "needs"], ids=_id)
def test_command_that_needs_something_fails_with_its_message(c: Command, tmp_path: Path, data_root: Path):
    wd = _scratch(tmp_path, c)
    text = c.segments[0]
    keys = tuple(n for n in c.needs if n not in MISSING)
    tools = [n for n in c.needs if n in MISSING]
    available = all(shutil.which(t) if t == "conda" else importlib.util.find_spec(t) for t in tools)
    if tools and available:
        if "vllm" in tools:
            pytest.skip(f"{c.where}: vllm is installed; running the command would load a model on a GPU")
        rc, out = _run(wd, _dry(text) if shlex.split(text)[0] in SNAKEMAKE else text, _env())
        assert rc == 0, f"{c.where}: {text}\n{_tail(out)}"
        return
    # keys: run for real (never with a key); tools: as a dry run where snakemake, they fail before running
    run = text if keys or shlex.split(text)[0] not in SNAKEMAKE else _dry(text)
    rc, out = _run(wd, run, _env(drop=keys))
    assert rc != 0, f"{c.where}: succeeded without {c.needs}\n{_tail(out)}"
    expected = [MISSING_KEY.format(k) for k in keys] + [MISSING[t] for t in tools]
    assert any(e in out for e in expected), f"{c.where}: none of {expected} in\n{_tail(out)}"
    if keys:  # and nothing else went wrong: every failed job failed for a missing key
        others = re.findall(r"environment variable (\w+) is not set", out)
        assert set(others) <= set(keys), f"{c.where}: also needs {set(others) - set(keys)}; mark it"
