"""Every shell command of the documentation runs, as typed, in a fresh shell.

The docs are a contract: a command they show must work as written by a reader who did only
what the page said before it.  Sources (new pages are picked up by the glob):

* ``README.md`` and every ``docs/**/*.md`` page.  Every fence is read: in ``bash``/``sh``/
  ``shell``/``console`` fences every line is a command; in unlabelled, ``text`` and other
  non-config fences (backtick or ``~~~``, indented or not) every line that starts like a command
  (``snakemake``, ``judgelab``, ``python``, ``pip``, ``bash``, ``source``, ``export``, ``mkdocs``,
  ``scripts/...``, ``.venv/bin/...``).  ``\\`` continuations are joined, comment lines and ``$ ``
  prompts dropped; a trailing ``# ...`` is the command's note.
* the command headers (``#   snakemake ...`` / ``#   judgelab ...`` comment lines, notes and
  continuations included) of every shipped config file: ``config/examples/*.yaml``,
  ``config/*-own-data.yaml`` and ``config/judges/*.yaml``.  They run after the activation a
  reader does once (``source .venv/bin/activate``).  A header command that a page shows too runs
  once, as the page's.

How each runs: ``bash -c`` under ``env -i`` (only ``HOME``, a basic ``PATH``, ``LANG``, the test's
``HF_HUB_OFFLINE=1``/``JUDGELAB_PROGRESS=0`` and ``PYTHONPATH`` at the scratch copy, so the copy's
code runs as an editable install of the reader's checkout would), with ``set -o pipefail``, in a scratch copy
of the checkout (``.venv`` linked in, ``../shared/data`` linked to the public data), after exactly
the ``source .venv/bin/activate`` and ``export ...`` lines shown earlier on the same page.  So a
page that forgets to activate, or uses ``$JUDGELAB_DATA`` before exporting it, fails here.

* ``snakemake`` / ``.venv/bin/snakemake``: with ``-n`` added after the program (a dry run plans the
  whole DAG the command asks for: config merge, roles, schema, targets).  ``judgelab plan`` plans
  its DAG the same way (``snakemake -n`` with its config files and targets; its stand-in run is
  ``tests/workflow/test_plan.py``'s).  Real runs are measured once and their times sit in the docs' tables.
  Dry runs that plan the same DAG (same setup lines, program, config files in order, options and
  targets; ``--cores`` aside) run once, as the first page's (:func:`run_key`): the same plan shown on
  three pages is one plan.
* ``judgelab``: exactly as written.  Where a command names the reader's own files (an AlpacaEval
  ``annotations.json``, Arena-Hard judgments, a mapped CSV log, a pairs file) the test writes
  stand-ins in the published layouts first (:data:`STAND_INS`).
* ``mkdocs build`` and ``python -m pytest`` on named test files: exactly as written.
* the README's test command is what ``.ci/run`` runs, character for character;
  ``bash scripts/install.sh`` / ``bash scripts/install-services.sh`` before ``&&`` (or alone) are
  the install steps ``.ci/run`` runs itself.

Markers, written in the docs:

* ``# needs OPENAI_API_KEY`` (or several variables): the command runs with those variables unset
  and must fail with the backend's message ``environment variable <VAR> is not set`` and no other
  error.  Keys are never used by the test, even when set.
* ``# needs conda`` / ``# needs vllm`` / ``# needs cuda``: without them on this machine the command must fail with
  the message that names them; where they exist the command must succeed.
* ``# not run by the test: <reason>`` after a command, or ``<!-- not run by the test: <reason> -->``
  on the line before a fence for the whole block: installs, benchmarks, mutation runs, services.

A command that fits none of these fails :func:`test_every_command_is_classified`, so a new docs
command cannot go untested silently.
"""

from __future__ import annotations

import argparse
import compileall
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
SHELL_LANGS = {"bash", "sh", "shell", "console", "zsh"}
CONFIG_LANGS = {"yaml", "yml", "json", "toml", "python", "py", "csv", "ini", "html", "rst", "diff"}
SNAKEMAKE = {"snakemake", ".venv/bin/snakemake"}
JUDGELAB = {"judgelab", ".venv/bin/judgelab"}
INSTALL_STEPS = {"bash scripts/install.sh", "bash scripts/install-services.sh"}
# how a line in a fence that is not a shell fence starts when it is a command
COMMAND_START = re.compile(r"^(?:\$ )?(?:[A-Z_][A-Z0-9_]*=\S*\s+)*(?:snakemake|judgelab|python3?|pip3?|bash|sh|source|"
                           r"export|mkdocs|sudo|conda|cd|\.venv/bin/\S+|scripts/\S+)(?:\s|$)")
NOT_RUN = re.compile(r"not run by the test:\s*(?P<reason>.*)")
NEEDS = re.compile(r"\bneeds\s+(?P<what>conda|vllm|cuda|[A-Z][A-Z0-9_]*(?:\s*,\s*[A-Z][A-Z0-9_]*)*)")
SETUP = re.compile(r"^(?:source \.venv/bin/activate|export [A-Za-z_][A-Za-z0-9_]*=\S+)$")
WORKFLOW_PARTS = ["Snakefile", "rules", "config", "workflow_scripts", "report", "envs", "judgelab", "data",
                  "pyproject.toml", "profiles", "scripts", "benchmarks", "docs", "mkdocs.yml", "tests", ".ci"]
MISSING_KEY = "environment variable {} is not set"
MISSING = {"conda": "Is conda installed and accessible?", "vllm": "the vllm backend needs vllm",
           "cuda": "needs a CUDA GPU"}
BASE_PATH = "/usr/local/bin:/usr/bin:/bin"


@dataclass(frozen=True)
class Command:
    """One command as written: where (``PAGE:LINE``), its text, its note, and what the page did before it."""

    where: str
    text: str
    note: str
    block_note: str = ""    # the ``<!-- ... -->`` line right before its fence
    yaml_above: str = ""    # the YAML block right before its fence (a config file the text names)
    setup: tuple[str, ...] = ()  # the page's ``source .venv/bin/activate`` / ``export`` lines before it

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

    @property
    def program(self) -> str:
        """The first word of the (first) segment after ``VAR=value`` assignments."""
        words = shlex.split(self.segments[0]) if self.segments else [""]
        return next((w for w in words if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", w)), "")


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


FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})\s*\{?\.?(?P<lang>[\w+-]*)")


def page_commands(text: str, where: str) -> list[Command]:
    """The commands of every fence of a Markdown page, in order, each with the setup lines before it."""
    lines = text.splitlines()
    out: list[Command] = []
    setup: list[str] = []
    i, last_yaml = 0, ""
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, indent, lang, start = m.group("fence"), len(m.group("indent")), m.group("lang").lower(), i
        j = i + 1
        while j < len(lines) and not (lines[j].strip().startswith(fence[0] * len(fence))
                                      and lines[j].strip().strip(fence[0]) == ""):
            j += 1
        body = [ln[indent:] if ln[:indent].strip() == "" else ln.lstrip() for ln in lines[start + 1:j]]
        if lang in ("yaml", "yml"):
            last_yaml = "\n".join(body) + "\n"
        elif lang not in CONFIG_LANGS:
            shell = lang in SHELL_LANGS
            before = lines[start - 1].strip() if start > 0 else ""
            block_note = before[4:-3].strip() if before.startswith("<!--") and before.endswith("-->") else ""
            k = 0
            while k < len(body):
                first = k
                raw = body[k].strip()
                if raw.startswith("$ "):
                    raw = raw[2:]
                if not raw or raw.startswith("#") or not (shell or COMMAND_START.match(raw)):
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
                text_ = " ".join(parts)
                c = Command(f"{where}:{start + 2 + first}", text_, "; ".join(notes), block_note, last_yaml,
                            tuple(setup))
                if SETUP.match(text_):
                    setup.append(text_)
                out.append(c)
                k += 1
        i = j + 1
    return out


def readme_commands(text: str | None = None, where: str = "README.md") -> list[Command]:
    """The commands of README.md (or of ``text``)."""
    return page_commands(README.read_text(encoding="utf-8") if text is None else text, where)


def doc_pages() -> list[Path]:
    return [README, *sorted((REPO / "docs").rglob("*.md"))]


def docs_commands() -> list[Command]:
    out = []
    for page in doc_pages():
        out += page_commands(page.read_text(encoding="utf-8"), str(page.relative_to(REPO)))
    return out


def config_files() -> list[Path]:
    c = REPO / "config"
    return sorted([*(c / "examples").glob("*.yaml"), *c.glob("*-own-data.yaml"), *(c / "judges").glob("*.yaml")])


HEADER = re.compile(r"^#\s{2,}((?:\.venv/bin/)?(?:snakemake\s+-|judgelab\s+[a-z-]+(?:\s|$)).*)$")


def config_header_commands(paths: list[Path] | None = None) -> list[Command]:
    """``#   snakemake ...`` / ``#   judgelab ...`` commands in the comments of the shipped config files."""
    out = []
    for path in paths if paths is not None else config_files():
        lines = path.read_text(encoding="utf-8").splitlines()
        where = str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)
        k = 0
        while k < len(lines):
            m = HEADER.match(lines[k])
            if not m:
                k += 1
                continue
            first, parts, notes, raw = k, [], [], m.group(1)
            while True:
                cmd, note = _split_note(raw)
                if note:
                    notes.append(note)
                cont = cmd.endswith("\\")
                parts.append(cmd[:-1].strip() if cont else cmd.strip())
                if not cont or k + 1 >= len(lines):
                    break
                k += 1
                raw = lines[k].lstrip("#").strip()
            out.append(Command(f"{where}:{first + 1}", " ".join(parts), "; ".join(notes),
                               setup=("source .venv/bin/activate",)))
            k += 1
    return out


def _norm(text: str) -> str:
    return " ".join(text.split())


def all_commands() -> list[Command]:
    """Docs commands then header commands; a command with the same text and setup runs once."""
    seen: set[tuple[tuple[str, ...], str]] = set()
    known = set()
    out = []
    for c in docs_commands():
        known.add(_norm(c.text))
        key = (c.setup, _norm(c.text))
        if key not in seen or SETUP.match(c.text):
            seen.add(key)
            out.append(c)
    return out + [c for c in config_header_commands() if _norm(c.text) not in known]


def ci_command() -> str:
    """The command ``.ci/run`` runs (its last line)."""
    return (REPO / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()[-1].strip()


def classify(c: Command) -> str:
    """``setup``, ``not_run``, ``install``, ``ci``, ``pytest``, ``mkdocs``, ``needs``, ``plan``, ``snakemake``,
    ``judgelab``; ValueError when none fits."""
    if SETUP.match(c.text):
        return "setup"
    if c.not_run_reason is not None:
        return "not_run"
    if c.text == ci_command():  # the type check, then the suite
        return "ci"
    if not c.segments:
        return "install"
    if len(c.segments) != 1:
        raise ValueError(f"{c.where}: cannot classify {c.text!r}: one command per line (or install && command)")
    if "pytest" in c.text:
        return "ci" if c.text == ci_command() else "pytest"
    if c.program == "mkdocs":
        return "mkdocs"
    if c.program not in SNAKEMAKE | JUDGELAB:
        raise ValueError(f"{c.where}: cannot classify {c.text!r}: not snakemake/judgelab, no marker "
                         f"('# needs VAR', '# not run by the test: reason')")
    if c.needs:
        return "needs"
    if c.program in JUDGELAB and shlex.split(c.segments[0])[1:2] == ["plan"]:
        return "plan"
    return "snakemake" if c.program in SNAKEMAKE else "judgelab"


def kind(c: Command) -> str:
    """:func:`classify`, or ``unclassified`` (which :func:`test_every_command_is_classified` reports)."""
    try:
        return classify(c)
    except ValueError:
        return "unclassified"


COMMANDS = all_commands()
RUN = ("snakemake", "judgelab", "plan", "mkdocs", "pytest")


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


def test_parser_reads_every_fence_type():
    text = ("```\nresults/x.csv   a table, not a command\njudgelab backends\n```\n"
            "```text\nsnakemake --cores 2 \\\n  -- t.csv\n```\n"
            "~~~\njudgelab cache-stats\n~~~\n"
            "~~~bash\njudgelab check-config\n~~~\n"
            "* a list item:\n\n    ```bash\n    judgelab plan t.csv\n    ```\n"
            "!!! note\n    ~~~sh\n    snakemake -n\n    ~~~\n"
            "```python\nimport judgelab\njudgelab = 1\n```\n"
            "````markdown\n```bash\njudgelab inner\n```\n````\n")
    got = [c.text for c in readme_commands(text, "T.md")]
    assert got == ["judgelab backends", "snakemake --cores 2 -- t.csv", "judgelab cache-stats", "judgelab check-config",
                   "judgelab plan t.csv", "snakemake -n", "judgelab inner"]


def test_setup_lines_carry_to_later_commands_of_the_same_page_only():
    page = ("```bash\njudgelab backends\n```\n```bash\nsource .venv/bin/activate\n```\n"
            "```bash\njudgelab audit x --out a/\nexport JUDGELAB_DATA=../shared/data\njudgelab plan t\n```\n")
    cs = page_commands(page, "P.md")
    by = {c.text: c for c in cs}
    assert by["judgelab backends"].setup == ()
    assert by["judgelab audit x --out a/"].setup == ("source .venv/bin/activate",)
    assert by["judgelab plan t"].setup == ("source .venv/bin/activate", "export JUDGELAB_DATA=../shared/data")
    assert page_commands("```bash\njudgelab backends\n```\n", "Q.md")[0].setup == ()


def test_header_commands_keep_notes_and_continuations(tmp_path: Path):
    f = tmp_path / "x.yaml"
    f.write_text("# intro\n#   judgelab plan --configfile config/judges/api.yaml          # calls first\n"
                 "#   snakemake --cores 2 --configfile a.yaml \\\n#     -- t.csv   # needs conda\nk: 1\n")
    cs = config_header_commands([f])
    assert [(c.text, c.note) for c in cs] == [("judgelab plan --configfile config/judges/api.yaml", "calls first"),
                                              ("snakemake --cores 2 --configfile a.yaml -- t.csv", "needs conda")]
    assert cs[1].needs == ["conda"] and cs[0].setup == ("source .venv/bin/activate",)


def test_every_doc_page_and_config_header_is_read():
    wheres = {c.where.split(":")[0] for c in COMMANDS}
    for page in doc_pages():
        if "```" in page.read_text(encoding="utf-8") and re.search(r"^\s*(snakemake|judgelab) ", page.read_text(
                encoding="utf-8"), re.M):
            assert str(page.relative_to(REPO)) in wheres, page
    headers = {c.where.split(":")[0] for c in config_header_commands()}
    assert {p for p in headers if p.startswith("config/judges/")} >= {
        "config/judges/api.yaml", "config/judges/local-cpu.yaml", "config/judges/vllm-open.yaml"}


def test_every_command_is_classified():
    assert len(COMMANDS) > 30
    kinds = {c.where: classify(c) for c in COMMANDS}  # raises, naming the command, when one fits nothing
    for k in ("snakemake", "judgelab", "needs", "plan", "setup", "ci"):
        assert k in kinds.values(), k
    with pytest.raises(ValueError, match="cannot classify"):
        classify(Command("X:1", "python -c 'print(1)'", ""))


def test_commands_that_need_the_environment_come_after_activation():
    """On every page, a bare ``snakemake``/``judgelab``/``mkdocs``/``python`` line comes after the page's
    ``source .venv/bin/activate``, and ``$JUDGELAB_DATA`` after its ``export``."""
    for c in COMMANDS:
        if kind(c) in ("setup", "not_run", "install", "ci"):
            continue
        if not c.program.startswith(".venv/bin/"):
            assert "source .venv/bin/activate" in c.setup, f"{c.where}: {c.text!r} before the page activates .venv"
        for var in re.findall(r"\$\{?([A-Z_][A-Z0-9_]*)", c.text):
            assert any(s.startswith(f"export {var}=") for s in c.setup), f"{c.where}: ${var} is never exported"


def test_not_run_markers_give_a_reason_and_stay_few():
    skipped = [c for c in COMMANDS if c.not_run_reason is not None]
    for c in skipped:
        assert len(c.not_run_reason) > 10, f"{c.where}: 'not run by the test' needs a reason"
    # installs, benchmarks, mutation runs, services and templates with placeholders only: everything else is run.
    # The benchmark pages hold the measuring commands, each skipped as a benchmark; the guides stay few.
    in_guides = [c for c in skipped if not c.where.startswith("docs/benchmarks")]
    assert len(in_guides) < 30, [c.where for c in in_guides]
    for c in skipped:
        if c.where.startswith("docs/benchmarks"):
            assert re.search(r"benchmark|mutation|minutes|hours", c.not_run_reason), (c.where, c.not_run_reason)
    for c in skipped:
        assert re.search(r"install|benchmark|mutation|minutes|hours|placeholder|daemon|server", c.not_run_reason), (
            c.where, c.not_run_reason)


def test_readme_test_command_is_what_ci_runs():
    ci = [c for c in COMMANDS if kind(c) == "ci"]
    assert [c.where.split(":")[0] for c in ci] == ["README.md"], [c.where for c in ci]
    assert ci[0].text == ci_command()
    for step in INSTALL_STEPS:
        assert (REPO / step.split()[1]).is_file()
    assert [c.text for c in readme_commands()[:1]] == ["bash scripts/install.sh && .venv/bin/snakemake --cores 2"]


def test_expected_messages_are_the_ones_the_code_prints():
    # the docs' markers promise these messages; they must be the code's own wording
    src = (REPO / "judgelab" / "judges" / "openai_backend.py").read_text(encoding="utf-8")
    assert MISSING_KEY.format("{key_env}") in src
    assert MISSING["vllm"] in (REPO / "judgelab" / "judges" / "vllm_backend.py").read_text(encoding="utf-8")


def test_snakemake_targets_follow_a_double_dash_after_configfile():
    # snakemake 9 reads every word after --configfile (and --resources, --config) as more of them
    for c in COMMANDS:
        if kind(c) not in ("snakemake", "needs") or c.program not in SNAKEMAKE:
            continue
        words = shlex.split(c.segments[0])
        for flag in ("--configfile", "--resources", "--config"):
            if flag not in words:
                continue
            rest = words[words.index(flag) + 1:]
            vals = rest[:next((i for i, w in enumerate(rest) if w.startswith("-")), len(rest))]
            assert all(re.search(r"\.ya?ml$|=", v) for v in vals), f"{c.where}: {flag} swallows {vals}"


def test_config_headers_name_only_shipped_config_files():
    for c in config_header_commands():
        for w in shlex.split(c.text):
            if re.search(r"\.ya?ml$", w) and not w.startswith("-"):
                assert (REPO / w).is_file(), f"{c.where}: {w} does not exist"


# ---------------------------------------------------------------------------------------------
# the fresh shell


def clean_env(wd: Path, drop: tuple[str, ...] = ()) -> dict[str, str]:
    """What a new login shell has before the docs' lines: HOME, a basic PATH, a locale; plus the test's
    offline switches, and ``PYTHONPATH`` at the scratch checkout ``wd``, so its code is the code that runs
    (as an editable install of the reader's checkout would) and its ``../shared/data`` is the default data."""
    env = {"PATH": BASE_PATH, "HOME": os.environ.get("HOME", "/root"), "LANG": "C.UTF-8",
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "JUDGELAB_PROGRESS": "0", "PYTHONPATH": str(wd)}
    for k in drop:
        env.pop(k, None)
    return env


def script(c: Command, text: str) -> str:
    """The shell script of one command: pipefail, the page's setup lines, the command."""
    return "\n".join(["set -o pipefail", *c.setup, text])


def run_shell(wd: Path, body: str, env: dict[str, str]) -> tuple[int, str]:
    proc = subprocess.run(["env", "-i", *(f"{k}={v}" for k, v in env.items()), "bash", "--noprofile", "--norc",
                           "-c", body], cwd=wd, capture_output=True, text=True)
    logs = "".join(p.read_text(errors="replace") for p in sorted((wd / "results" / "logs").rglob("*.log"))
                   ) if (wd / "results" / "logs").is_dir() else ""
    return proc.returncode, proc.stdout + proc.stderr + logs


def test_the_shell_is_fresh_and_fails_a_failing_pipeline(tmp_path: Path):
    """The harness itself: a failed command piped into ``tail`` fails, nothing of the test's environment
    leaks in, and without the page's activation the tools are not found."""
    c = Command("X:1", "false | tail -3", "")
    assert run_shell(tmp_path, script(c, c.text), clean_env(tmp_path))[0] != 0
    os.environ["JUDGELAB_TEST_LEAK"] = "1"
    try:
        rc, out = run_shell(tmp_path, 'echo "[$JUDGELAB_TEST_LEAK][$VIRTUAL_ENV][$JUDGELAB_DATA]"', clean_env(tmp_path))
    finally:
        del os.environ["JUDGELAB_TEST_LEAK"]
    assert out.strip() == "[][][]"
    rc, out = run_shell(tmp_path, "judgelab --help", clean_env(tmp_path))
    assert rc == 127 and "command not found" in out


# ---------------------------------------------------------------------------------------------
# slow: running them


def _canon_stand_ins():
    from tests.verdict_import import test_verdict_import as vi

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
    the docs' command names (``data/arena-hard-v2.0/{model_judgment/<judge>/, model_answer/, question.jsonl}``)."""
    src = REPO / "tests" / "fixtures" / "verdict_logs" / "arena_hard_v2"
    dest = wd / "data" / "arena-hard-v2.0"
    shutil.copytree(src / "model_answer", dest / "model_answer")
    shutil.copy2(src / "question.jsonl", dest / "question.jsonl")
    shutil.copytree(src / "model_judgment" / "gemini-2.5-flash", dest / "model_judgment" / "gpt-4.1")


def _alpaca_eval(wd: Path) -> None:
    _canon_stand_ins().fixture_alpaca_eval(wd)  # annotations.json


def _mapped_log(wd: Path) -> None:
    """The docs' mapping example (the YAML block with ``judge: {const: my-judge}``) and a CSV in its layout."""
    blocks = [b for p in doc_pages() for b in re.findall(r"```yaml\n(.*?)```", p.read_text(encoding="utf-8"), re.S)]
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
    """The call cache a run leaves in ``results/cache/``: the docs' ``judgelab judge`` line, run first."""
    _pairs(wd)
    rc, out = run_shell(wd, "source .venv/bin/activate && judgelab judge --judge sim-gpt-4o --pairs my_pairs.jsonl "
                            "--out verdicts.csv", clean_env(wd))
    assert rc == 0 and (wd / "results" / "cache" / "calls.sqlite").exists(), out[-2000:]


#: files a docs command writes that a later command reads (path -> the command that writes it)
MADE_BY = {"out/style_coefficients.json":
           "judgelab leaderboard --format alpaca_eval ../shared/data/alpaca_eval/results --out out/"}
#: those files as the writing command left them in its own scratch copy, once it has run in this session
_MADE: dict[str, bytes] = {}


def _keep_what_later_commands_read(c: Command, wd: Path) -> None:
    """After ``c`` ran well: the files of :data:`MADE_BY` it writes, kept for the stand-ins."""
    for path, cmd in MADE_BY.items():
        if c.setup == ("source .venv/bin/activate",) and _norm(c.segments[0]) == cmd and (wd / path).is_file():
            _MADE[path] = (wd / path).read_bytes()


def _style_reference(wd: Path) -> None:
    """``out/style_coefficients.json``: what the leaderboard page's first command leaves -- its file from its
    own run in this session, else that command run first here."""
    path = "out/style_coefficients.json"
    if path in _MADE:
        (wd / path).parent.mkdir(parents=True, exist_ok=True)
        (wd / path).write_bytes(_MADE[path])
        return
    rc, out = run_shell(wd, f"source .venv/bin/activate && {MADE_BY[path]}", clean_env(wd))
    assert rc == 0 and (wd / path).exists(), out[-2000:]


# the reader's own files that docs commands name, or what an earlier run leaves -> a stand-in
# in the published layout
STAND_INS = {"annotations.json": _alpaca_eval, "arena-hard-v2.0/": _arena_hard_v2,
             "model_judgment/": _arena_hard, "my_log.yaml": _mapped_log,
             "my_pairs.jsonl": _pairs, "judgelab cache-stats": _cache,
             "out/style_coefficients.json": _style_reference}


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    """The checkout's parts, copied once per module (without the checkout's bytecode) and judgelab's
    bytecode compiled from these very files: every command's scratch copy is a fresh copy of this, so its
    imports read bytecode that matches its sources instead of compiling them again in each command."""
    wd = tmp_path_factory.mktemp("checkout") / "wf"
    wd.mkdir()
    for part in WORKFLOW_PARTS:
        src = REPO / part
        if src.is_dir():
            shutil.copytree(src, wd / part, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        elif src.exists():
            shutil.copy2(src, wd / part)
    assert compileall.compile_dir(str(wd / "judgelab"), quiet=1)
    return wd


def _scratch(tmp_path: Path, c: Command, data_root: Path, checkout: Path) -> Path:
    """A copy of the checkout at ``tmp/wf`` with ``.venv`` linked in and the public data at ``tmp/shared/data``
    (``../shared/data`` seen from the checkout, as on the machine the docs describe).  ``checkout`` is
    the module's copy (:func:`checkout`); ``copytree`` keeps modification times, which the bytecode checks."""
    wd = tmp_path / "wf"
    shutil.copytree(checkout, wd, symlinks=True)
    venv = REPO / ".venv" if (REPO / ".venv").exists() else Path(sys.prefix)
    os.symlink(venv.resolve(), wd / ".venv")
    (tmp_path / "shared").mkdir()
    os.symlink(data_root.resolve(), tmp_path / "shared" / "data")
    for name, write in STAND_INS.items():
        if name in c.text:
            write(wd)
    for w in shlex.split(c.segments[0]):  # a config file the page shows as the YAML block right above
        if re.search(r"^[\w.-]+\.ya?ml$", w) and not (wd / w).exists() and c.yaml_above:
            (wd / w).write_text(c.yaml_above)
    return wd


def _dry(text: str) -> str:
    prog, _, rest = text.partition(" ")
    return f"{prog} -n {rest}"


def _plan_as_dry_run(text: str) -> str:
    """``judgelab plan [--configfile F]... [targets]`` -> the ``snakemake -n`` of the DAG it plans."""
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--configfile", action="append", default=[])
    p.add_argument("--directory")
    p.add_argument("--cores")
    p.add_argument("--out")
    p.add_argument("--batch-dir")  # the batch files are tests/batch/test_batch_files.py's
    p.add_argument("targets", nargs="*")
    a = p.parse_args(shlex.split(text)[2:])
    cmd = ["snakemake", "-n", "--cores", "1"]
    if a.configfile:
        cmd += ["--configfile", *a.configfile]
    if a.targets:
        cmd += ["--", *a.targets]
    return shlex.join(cmd)


def _tail(out: str) -> str:
    return out[-4000:]


def run_form(c: Command) -> str:
    """What the test runs for a command of a kind in :data:`RUN`: the dry run of a ``snakemake`` or
    ``judgelab plan`` command, else the command as written."""
    return {"snakemake": _dry, "plan": _plan_as_dry_run}.get(classify(c), lambda t: t)(c.segments[0])


#: the options of the docs' dry runs, and whether each takes values (``--configfile``: one or more)
DRY_OPTIONS = {"-n": 0, "--unlock": 0, "--rerun-incomplete": 0, "--cores": 1, "--profile": 1,
               "--configfile": -1, "--resources": -1, "--config": -1}


def run_key(c: Command) -> tuple:
    """Two commands with one key plan, or run, the same thing: the same setup lines and the same text,
    or, for a dry run, the same program, config files in their order, other options and set of targets
    (``--cores`` aside: it scales threads, and a dry run plans the same DAG at any count).  A dry run
    with an option outside :data:`DRY_OPTIONS` is keyed by its text."""
    run = run_form(c)
    if classify(c) not in ("snakemake", "plan"):
        return (c.setup, _norm(run))
    words = shlex.split(run)
    configs: list[str] = []
    options: list[tuple[str, ...]] = []
    targets: set[str] = set()
    i, dashes = 1, False
    while i < len(words):
        w = words[i]
        if dashes or not w.startswith("-"):
            targets.add(w)
        elif w == "--":
            dashes = True
        elif w not in DRY_OPTIONS:
            return (c.setup, _norm(run))
        elif DRY_OPTIONS[w] == 1:
            if w != "--cores":
                options.append((w, words[i + 1]))
            i += 1
        elif DRY_OPTIONS[w] == -1:
            vals = []
            while i + 1 < len(words) and not words[i + 1].startswith("-"):
                vals.append(words[i + 1])
                i += 1
            if w == "--configfile":
                configs += vals
            else:
                options.append((w, *vals))
        else:
            options.append((w,))
        i += 1
    return (c.setup, words[0], tuple(configs), tuple(sorted(options)), frozenset(targets))


def distinct_runs(commands: list[Command]) -> tuple[list[Command], dict[str, list[str]]]:
    """The first command of each :func:`run_key`, and for each the places of the others it stands for
    (a paper config's plan is shown on its study page, in the benchmarks and in its header)."""
    first: dict[tuple, Command] = {}
    also: dict[str, list[str]] = {}
    for c in commands:
        key = run_key(c)
        if key in first:
            also[first[key].where].append(c.where)
        else:
            first[key] = c
            also[c.where] = []
    return list(first.values()), also


RUNS, SAME_RUN = distinct_runs([c for c in COMMANDS if kind(c) in RUN])


def test_commands_that_run_the_same_are_run_once():
    """The key merges what plans the same and nothing else: the same plan shown on three pages, a plan's
    dry run and the snakemake line it stands for; not other targets, configs in another order or other setup."""
    lines = iter(range(1, 100))

    def cmd(text: str, setup: tuple[str, ...] = ("source .venv/bin/activate",)) -> Command:
        return Command(f"X:{next(lines)}", text, "", setup=setup)

    same = [cmd("snakemake --cores 2 --configfile a.yaml -- t.csv u.csv"),
            cmd("snakemake --cores 8 u.csv t.csv --configfile a.yaml"),
            cmd("judgelab plan --configfile a.yaml t.csv u.csv")]
    assert len({run_key(c) for c in same}) == 1
    other = [cmd("snakemake --cores 2 --configfile a.yaml -- t.csv"),
             cmd("snakemake --cores 2 --configfile b.yaml a.yaml -- t.csv u.csv"),
             cmd("snakemake --cores 2 --configfile a.yaml b.yaml -- t.csv u.csv"),
             cmd("snakemake --cores 2 --configfile a.yaml --resources api_slots=4 -- t.csv u.csv"),
             cmd("snakemake --cores 2 --configfile a.yaml --unlock -- t.csv u.csv"),
             cmd("snakemake --cores 2 --configfile a.yaml --forceall -- t.csv u.csv"),
             cmd(".venv/bin/snakemake --cores 2 --configfile a.yaml -- t.csv u.csv"),
             cmd("snakemake --cores 2 --configfile a.yaml -- t.csv u.csv", setup=())]
    keys = [run_key(c) for c in same[:1] + other]
    assert len(set(keys)) == len(keys)
    runs, also = distinct_runs(same + other)
    assert runs == same[:1] + other and also[same[0].where] == [c.where for c in same[1:]]
    # every command to run is run, or stands with the one that runs for it
    listed = [c.where for c in RUNS] + [w for ws in SAME_RUN.values() for w in ws]
    assert sorted(listed) == sorted(c.where for c in COMMANDS if kind(c) in RUN)


def test_a_file_a_later_command_reads_is_written_by_an_earlier_docs_command():
    """The stand-in kept from a writing command's run is that command's file: the command is a docs
    command, run (in its own scratch copy) before any command that reads the file."""
    for path, cmd in MADE_BY.items():
        writers = [i for i, c in enumerate(RUNS) if c.setup == ("source .venv/bin/activate",)
                   and _norm(c.segments[0]) == cmd]
        readers = [i for i, c in enumerate(RUNS) if path in c.text]
        assert writers and readers and writers[0] < min(readers), (path, writers, readers)


@pytest.mark.slow
@pytest.mark.parametrize("c", RUNS, ids=_id)
def test_command_runs_as_written(c: Command, tmp_path: Path, data_root: Path, checkout: Path):
    wd = _scratch(tmp_path, c, data_root, checkout)
    text = c.segments[0]
    k = classify(c)
    run = run_form(c)
    rc, out = run_shell(wd, script(c, run), clean_env(wd))
    assert rc == 0, f"{c.where} (and {SAME_RUN[c.where]}): {run}\n{_tail(out)}"
    _keep_what_later_commands_read(c, wd)
    if k in ("snakemake", "plan"):
        # a plan (dry run), or --unlock's own answer (it plans nothing; -n leaves it a no-op elsewhere)
        expected = (("Unlocked working directory.",) if "--unlock" in shlex.split(text)
                    else ("This was a dry-run", "Nothing to be done"))
        assert any(m in out for m in expected), _tail(out)


@pytest.mark.slow
@pytest.mark.parametrize("c", [c for c in COMMANDS if kind(c) == "needs"], ids=_id)
def test_command_that_needs_something_fails_with_its_message(c: Command, tmp_path: Path, data_root: Path,
                                                            checkout: Path):
    wd = _scratch(tmp_path, c, data_root, checkout)
    text = c.segments[0]
    keys = tuple(n for n in c.needs if n not in MISSING)
    tools = [n for n in c.needs if n in MISSING]
    available = all(shutil.which(t) if t == "conda" else importlib.util.find_spec(t) for t in tools)
    if tools and available:
        if "vllm" in tools:
            pytest.skip(f"{c.where}: vllm is installed; running the command would load a model on a GPU")
        rc, out = run_shell(wd, script(c, _dry(text) if c.program in SNAKEMAKE else text), clean_env(wd))
        assert rc == 0, f"{c.where}: {text}\n{_tail(out)}"
        return
    # keys: run for real (never with a key); tools: as a dry run where snakemake, they fail before running
    run = text if keys or c.program not in SNAKEMAKE else _dry(text)
    rc, out = run_shell(wd, script(c, run), clean_env(wd, drop=keys))
    assert rc != 0, f"{c.where}: succeeded without {c.needs}\n{_tail(out)}"
    expected = [MISSING_KEY.format(k) for k in keys] + [MISSING[t] for t in tools]
    assert any(e in out for e in expected), f"{c.where}: none of {expected} in\n{_tail(out)}"
    if keys:  # and nothing else went wrong: every failed job failed for a missing key
        others = re.findall(r"environment variable (\w+) is not set", out)
        assert set(others) <= set(keys), f"{c.where}: also needs {set(others) - set(keys)}; mark it"
