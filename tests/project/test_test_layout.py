"""The tests mirror the package: ``judgelab/<package>/<module>.py`` is tested in
``tests/<package>/test_<module>.py`` (or ``test_<module>_<topic>.py``), a root module
``judgelab/<module>.py`` in ``tests/test_<module>*.py``; repository-wide checks (docs, layering,
benchmarks) live in ``tests/project/``, shared helpers in ``tests/helpers/``.  A module with code and
no mirrored file is listed in ``tests/untested_modules.md`` with the test files that exercise it,
each of which must exist -- and, for an ``imported by`` reason, import it -- so the list cannot rot."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.conftest import REPO

PKG = REPO / "judgelab"
TESTS = REPO / "tests"
LISTING = TESTS / "untested_modules.md"
ENTRY = re.compile(r"^- `(?P<module>judgelab/[\w/]+\.py)`: (?P<reason>.+)$")
TEST_PATH = re.compile(r"tests/[\w/]+\.py")


def has_code(path: Path) -> bool:
    """More than a docstring, imports and ``__all__``."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            continue
        return True
    return False


def mirror_of(module: Path, tests: Path = TESTS, pkg: Path = PKG) -> list[Path]:
    rel = module.relative_to(pkg)
    stem = module.stem if module.stem != "__init__" else rel.parent.name
    folder = tests / rel.parent
    return sorted([*folder.glob(f"test_{stem}.py"), *folder.glob(f"test_{stem}_*.py")])


def listing() -> dict[str, str]:
    return {m["module"]: m["reason"] for m in map(ENTRY.match, LISTING.read_text().splitlines()) if m}


def imports(test: Path, module: str) -> bool:
    dotted = module[:-3].replace("/", ".").removesuffix(".__init__")
    parent, _, leaf = dotted.rpartition(".")
    text = test.read_text()
    return bool(re.search(rf"(?:import|from)\s+{re.escape(dotted)}\b", text)
                or re.search(rf"from\s+{re.escape(parent)}\s+import\s+(?:\([^)]*|[^\n]*)\b{re.escape(leaf)}\b", text))


def layout_problems(pkg: Path = PKG, tests: Path = TESTS, listed: dict[str, str] | None = None) -> list[str]:
    listed = listing() if listed is None else listed
    problems = []
    for module in sorted(pkg.rglob("*.py")):
        rel = str(module.relative_to(pkg.parent))
        if not has_code(module):
            continue
        if mirror_of(module, tests, pkg):
            if rel in listed:
                problems.append(f"{rel}: has {mirror_of(module, tests, pkg)[0].relative_to(tests.parent)}; drop it from the list")
            continue
        if rel not in listed:
            problems.append(f"{rel}: no tests/<package>/test_<module>.py and not in {LISTING.name}")
            continue
        named = TEST_PATH.findall(listed[rel])
        if not named:
            problems.append(f"{rel}: the reason names no test file")
        for t in named:
            path = tests.parent / t
            if not path.is_file():
                problems.append(f"{rel}: {t} does not exist")
            elif listed[rel].startswith("imported by") and not imports(path, rel):
                problems.append(f"{rel}: {t} does not import it")
    for module in listed:
        if not (pkg.parent / module).is_file():
            problems.append(f"{module}: listed but not a module")
    return problems


def test_every_module_with_code_has_a_mirrored_test_file_or_a_checked_reason():
    assert layout_problems() == []


def test_test_files_sit_in_a_package_folder_or_name_a_root_module():
    packages = {p.name for p in PKG.iterdir() if (p / "__init__.py").is_file()}
    roots = {p.stem for p in PKG.glob("*.py")}
    for test in TESTS.rglob("test_*.py"):
        rel = test.relative_to(TESTS)
        if "fixtures" in rel.parts:
            continue
        if len(rel.parts) == 1:
            assert any(rel.stem == f"test_{m}" or rel.stem.startswith(f"test_{m}_") for m in roots), rel
        else:
            assert rel.parts[0] in packages | {"project"}, rel
            assert (TESTS / rel.parts[0] / "__init__.py").is_file(), rel


def test_the_check_bites(tmp_path):
    """A module without a mirror and unlisted, a stale listing, a reason naming a test that does not
    import the module: each is reported; a mirrored module is not."""
    pkg = tmp_path / "judgelab"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "sub" / "__init__.py").write_text('"""doc"""\n')
    (pkg / "sub" / "alpha.py").write_text("X = 1\n")
    (pkg / "sub" / "beta.py").write_text("Y = 2\n")
    (pkg / "sub" / "gamma.py").write_text("Z = 3\n")
    tests = tmp_path / "tests"
    (tests / "sub").mkdir(parents=True)
    (tests / "sub" / "test_alpha_units.py").write_text("from judgelab.sub import alpha\n")
    (tests / "sub" / "test_other.py").write_text("import os\n")
    listed = {"judgelab/sub/gamma.py": "imported by tests/sub/test_other.py",
              "judgelab/sub/gone.py": "imported by tests/sub/test_other.py"}
    got = layout_problems(pkg, tests, listed)
    assert got == ["judgelab/sub/beta.py: no tests/<package>/test_<module>.py and not in untested_modules.md",
                   "judgelab/sub/gamma.py: tests/sub/test_other.py does not import it",
                   "judgelab/sub/gone.py: listed but not a module"]
    listed["judgelab/sub/alpha.py"] = "imported by tests/sub/test_alpha_units.py"
    assert "judgelab/sub/alpha.py: has tests/sub/test_alpha_units.py; drop it from the list" in \
        layout_problems(pkg, tests, listed)
