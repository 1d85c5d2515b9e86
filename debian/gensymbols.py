#!/usr/bin/python3
"""gensymbols.py: debian/libdnsshim1.symbols from the linker version scripts.

The symbols file is never edited by hand: each library's export list
(csrc/lib/libdnsshim.map, csrc/ares/libdnsshim_ares.map) is the one source.
A symbol of node PREFIX_X.Y gets the minimal version X.Y.0 (the release that
added the node); the node itself is listed too (dpkg-gensymbols reports it
as NODE@NODE); an export list without nodes (c-ares's unversioned names)
gives NAME@Base at the release its library first shipped in (LIBRARIES), or
at the release a ``/* X.Y */`` comment line above it in the export list
names (what a later release appends there).  A private node
(PREFIX_PRIVATE: the entries one of the project's libraries calls in the
other) is no release: its names take their comment lines' releases too.

    debian/gensymbols.py                 # print the file
    debian/gensymbols.py --write         # (re)write debian/libdnsshim1.symbols
    debian/gensymbols.py --check         # exit 1 if the file is not what the
                                         # export lists give (debian/rules runs it)

The build then checks the libraries themselves against the file:
dh_makeshlibs -- -c4 makes dpkg-gensymbols fail on any difference, a symbol
missing from the library or one the library exports that the file lacks.
"""

import argparse
import re
import sys
from pathlib import Path

DEBIAN = Path(__file__).resolve().parent
ROOT = DEBIAN.parent

#: (SONAME, export list, minimal version of its unversioned symbols)
LIBRARIES = (
    ("libdnsshim.so.1", "csrc/lib/libdnsshim.map", None),
    ("libdnsshim_ares.so.1", "csrc/ares/libdnsshim_ares.map", "1.1.0"),
)
PACKAGE = "libdnsshim1"
DEV_PACKAGE = "libdnsshim-dev"


def version_nodes(text: str) -> dict:
    """{node: [symbol, ...]} of a linker version script, in its order; an
    anonymous node is "".  (The parser of build_ffi.version_nodes.)"""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"#[^\n]*", "", text)
    nodes = {}
    for node, body in re.findall(r"([\w.]*)\s*\{(.*?)\}[^;]*;", text, re.S):
        exported = body.split("local:")[0].replace("global:", "")
        names = [n.strip() for n in exported.split(";") if n.strip()]
        for n in names:
            if not re.fullmatch(r"[A-Za-z_]\w*", n):
                raise SystemExit(f"{node or '(anonymous)'}: '{n}' is not a plain symbol name "
                                 "(wildcards and C++ patterns are not supported here)")
        nodes[node] = names
    return nodes


def release_marks(text: str) -> dict:
    """{symbol: "X.Y.0"} for the unversioned symbols that follow a comment
    naming a release on its own line (``/* 1.3 */``), as the public header
    marks what a release appends: the release that added them."""
    marks, current = {}, None
    for line in text.splitlines():
        m = re.fullmatch(r"\s*/\*\s*(\d+)\.(\d+)\s*\*/\s*", line)
        if m:
            current = f"{m.group(1)}.{m.group(2)}.0"
            continue
        name = re.fullmatch(r"\s*([A-Za-z_]\w*)\s*;\s*", line)
        if name and current:
            marks[name.group(1)] = current
    return marks


def node_version(node: str) -> str:
    m = re.fullmatch(r"[A-Z][A-Z0-9_]*_(\d+)\.(\d+)", node)
    if not m:
        raise SystemExit(f"{node}: not a NAME_MAJOR.MINOR version node")
    return f"{m.group(1)}.{m.group(2)}.0"


def symbols_text(root: Path = ROOT, unversioned_since: dict | None = None) -> str:
    out = []
    for soname, map_path, since in LIBRARIES:
        if unversioned_since and soname in unversioned_since:
            since = unversioned_since[soname]
        map_text = (root / map_path).read_text(encoding="utf-8")
        nodes = version_nodes(map_text)
        marks = release_marks(map_text)
        out.append(f"{soname} {PACKAGE} #MINVER#")
        out.append(f"* Build-Depends-Package: {DEV_PACKAGE}")
        lines = []
        for node, names in nodes.items():
            if node.endswith("_PRIVATE"):
                # Not a release: each name is marked with the release that
                # added it, as c-ares's unversioned names are.
                unmarked = [n for n in names if n not in marks]
                if unmarked:
                    raise SystemExit(f"{map_path}: {node}'s {unmarked} follow no release "
                                     "comment (/* X.Y */)")
                lines.append((f"{node}@{node}", min(marks[n] for n in names)))
                lines += [(f"{n}@{node}", marks[n]) for n in names]
            elif node:
                version = node_version(node)
                lines.append((f"{node}@{node}", version))
                lines += [(f"{n}@{node}", version) for n in names]
            else:
                if since is None:
                    raise SystemExit(f"{map_path}: unversioned exports, but no minimal version "
                                     "for them (LIBRARIES)")
                lines += [(f"{n}@Base", marks.get(n, since)) for n in names]
        # dpkg-gensymbols's order: sorted by name
        out += [f" {name} {version}" for name, version in sorted(lines)]
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    g = p.add_mutually_exclusive_group()
    g.add_argument("--write", action="store_true")
    g.add_argument("--check", action="store_true")
    p.add_argument("--root", type=Path, default=ROOT, help="the source tree (default: ..)")
    p.add_argument("--output", type=Path, default=DEBIAN / f"{PACKAGE}.symbols")
    args = p.parse_args(argv)
    text = symbols_text(args.root)
    if args.write:
        args.output.write_text(text, encoding="utf-8")
    elif args.check:
        current = args.output.read_text(encoding="utf-8") if args.output.exists() else ""
        if current != text:
            sys.stderr.write(f"{args.output} is not what the export lists give: run "
                             "debian/gensymbols.py --write\n")
            return 1
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
