"""A prefix install's manifest (``python build_ffi.py --prefix``): what the
install wrote, so that it can be removed without the sources.

The manifest is JSON at ``<prefix>/share/dnsshim/install-manifest``:
``version``, ``files`` (every file and symbolic link, the manifest itself
among them) and ``dirs`` (the folders the installs made), each an absolute
path as programs see it.  A prefix may be moved whole: :func:`remove` then
removes the same names under the new place, found from the manifest's own
recorded path.

This module ships with the Python side, so that the prefix's own
``dnsshim-config --uninstall`` can read it; ``build_ffi.py --prefix
--uninstall`` uses it too.
"""

import json
from pathlib import Path

from shim import layout

NAME = "install-manifest"


class ManifestError(Exception):
    """Why the manifest cannot be used, in one line."""


#: The manifest's place under the prefix ("/share/dnsshim/install-manifest").
_UNDER_PREFIX = "/" + str(layout.PREFIX.relative("data")) + "/" + NAME


def path(prefix) -> Path:
    """Where the manifest of an install under prefix is."""
    return Path(str(prefix).rstrip("/") + _UNDER_PREFIX)


def _prefix_of(manifest: str) -> str:
    """The prefix of the install whose manifest is at that path."""
    return manifest[:-len(_UNDER_PREFIX)]


def read(where: Path) -> dict:
    """The manifest at where ({"files": [], "dirs": []} when there is none)."""
    if not where.is_file():
        return {"files": [], "dirs": []}
    return json.loads(where.read_text(encoding="utf-8"))


def _mover(recorded: dict, final: Path):
    """A function from a recorded path to the one it has now, the prefix
    having moved from where the manifest says it was to where it is."""
    own = [f for f in recorded["files"] if f.endswith(_UNDER_PREFIX)]
    if not own or own[0] == str(final):
        return lambda name: Path(name)
    old, new = _prefix_of(own[0]), _prefix_of(str(final))
    outside = [n for n in recorded["files"] + recorded["dirs"]
               if n != old and not n.startswith(old + "/")]
    if outside:
        raise ManifestError(f"the install was made under {old} and is now under {new}, but it "
                            f"also wrote {outside[0]}, outside that prefix: remove it from "
                            f"where it was installed ({old})")
    return lambda name: Path(new + name[len(old):])


def remove(final: Path, destdir: str = "") -> list:
    """Removes what the manifest at final (a path as programs see it; under
    destdir when staged) lists, then the folders the installs made, once
    empty; returns what it removed (as recorded).

    :raises ManifestError: when there is no manifest, or the prefix moved
        away from files it also wrote elsewhere.
    """
    root = destdir.rstrip("/")
    staged = Path(root + str(final))
    if not staged.is_file():
        raise ManifestError(f"{staged} does not exist: nothing was installed under "
                            f"{root + _prefix_of(str(final))} by build_ffi.py --prefix (or it "
                            "was uninstalled)")
    recorded = read(staged)
    now = _mover(recorded, final)

    def at(name: str) -> Path:
        return Path(root + str(now(name)))

    removed = []
    for name in recorded["files"]:
        target = at(name)
        if target.is_symlink() or target.is_file():
            target.unlink()
            removed.append(name)
        cache = target.parent / "__pycache__"  # the compiled files of a removed module
        if name.endswith(".py") and cache.is_dir():
            for pyc in cache.glob(f"{target.stem}.*.pyc"):
                pyc.unlink()
    for name in sorted(recorded["dirs"], key=lambda d: d.count("/"), reverse=True):
        target = at(name)
        cache = target / "__pycache__"
        if cache.is_dir() and not any(cache.iterdir()):
            cache.rmdir()
        if target.is_dir() and not any(target.iterdir()):
            target.rmdir()
            removed.append(name)
    return removed


def words(removed: list) -> str:
    """What an uninstall says it did."""
    return f"removed {len(removed)} of the install's files and folders"
