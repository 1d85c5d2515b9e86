"""The tree's layout: the runtime package (shim/) never imports the build
(dnsshim_build/, build_ffi.py), the build's modules import each other without
a circle, and the check that no installed form carries the build's code can
fail (each form's own test module runs it: test_install, test_prefix_install,
test_bundle, test_firmware, test_debian).  Every test module is in
tests/tiers.py's table of what depends on the CPython running pytest."""

import ast
from pathlib import Path

import pytest

from conftest import BUILD_MODULES, ROOT, build_code_in

PACKAGES = ("shim", "dnsshim_build")


def _imports(path: Path, package: str) -> set:
    """The modules of shim and dnsshim_build (and build_ffi) a file imports,
    anywhere in it, as dotted names."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([package] + ([base] if base else []))
            names = [base] + [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        for name in names:
            top = name.split(".")[0]
            if top in PACKAGES or top == "build_ffi":
                found.add(name)
    return found


def _graph() -> dict:
    """{module: the project modules it imports}, over shim/, dnsshim_build/
    and build_ffi.py (an import of a package's member that is a module
    counts as that module)."""
    files = {"build_ffi": ROOT / "build_ffi.py"}
    for package in PACKAGES:
        for path in (ROOT / package).glob("*.py"):
            name = package if path.stem == "__init__" else f"{package}.{path.stem}"
            files[name] = path
    graph = {}
    for name, path in files.items():
        package = name.split(".")[0]
        graph[name] = {m for m in _imports(path, package) if m in files and m != name}
    return graph


def test_the_runtime_never_imports_the_build():
    graph = _graph()
    wrong = {name: sorted(m for m in deps if not m.startswith("shim"))
             for name, deps in graph.items() if name.startswith("shim")}
    assert {name: deps for name, deps in wrong.items() if deps} == {}


def _cycle(graph) -> list:
    """A cycle of the graph as a list of modules, or []."""
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == "open":
                return stack[stack.index(dep):] + [dep]
            if dep not in state:
                found = visit(dep)
                if found:
                    return found
        state[node] = "done"
        stack.pop()
        return []

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return []


def test_no_import_circle():
    # Package __init__ modules aside: importing shim.x runs shim/__init__.py,
    # which is not a circle of the code's own.
    graph = {name: {d for d in deps if d not in PACKAGES} for name, deps in _graph().items()}
    assert _cycle(graph) == []


def test_the_cycle_finder_finds_one():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) == []


def test_the_runtime_holds_no_build_module():
    assert sorted(p.stem for p in (ROOT / "shim").glob("*.py") if p.stem in BUILD_MODULES) == []


def test_build_code_in_finds_what_it_must(tmp_path):
    """The check every installed form is put to can fail: a build module in a
    shim package, one in its __pycache__, and the build's package are each
    found."""
    (tmp_path / "shim" / "__pycache__").mkdir(parents=True)
    (tmp_path / "shim" / "glue.py").write_text("")
    (tmp_path / "shim" / "man.py").write_text("")
    (tmp_path / "shim" / "__pycache__" / "firmware.cpython-311.pyc").write_bytes(b"")
    (tmp_path / "dnsshim_build").mkdir()
    assert [p.relative_to(tmp_path).as_posix() for p in build_code_in(tmp_path)] == [
        "dnsshim_build", "shim/__pycache__/firmware.cpython-311.pyc", "shim/man.py"]


@pytest.mark.parametrize("module", sorted(BUILD_MODULES - {"build_ffi"}))
def test_each_build_module_lives_in_the_build(module):
    assert (ROOT / "dnsshim_build" / f"{module}.py").is_file()


def test_every_test_module_says_whether_its_subject_is_the_cpython():
    """tests/tiers.py's CPYTHON names every test module, each with a reason
    (conftest refuses to collect a module it does not name); the quick tier
    names modules that exist; and .ci/run's second pass selects by that
    table, not by a list of what to leave out."""
    import tiers

    modules = {p.stem for p in (ROOT / "tests").glob("test_*.py")}
    assert set(tiers.CPYTHON) == modules
    assert all(isinstance(depends, bool) and len(why) > 10
               for depends, why in tiers.CPYTHON.values())
    assert tiers.QUICK <= modules
    ci = (ROOT / ".ci" / "run").read_text()
    assert ".venv-3.13/bin/python -m pytest -m cpython\n" in ci
    assert "not python_independent" not in ci
