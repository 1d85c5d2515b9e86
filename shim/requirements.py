"""What the library's Python side needs, and the check the library makes of
it before anything else.

The floors are the oldest releases the library works with: dnspython 2.9.1
(2.9.0's ``dns.name.from_wire_parser`` takes no ``decompress`` argument;
2.8 has no BRID, HHIT, DSYNC... modules, which the parser table names), and
for cffi's backend the oldest release that supports the running CPython.
``pyproject.toml`` declares the same (build_ffi.py refuses to build when the
two differ).

:func:`problem` is run by the library itself (csrc/lib/dns_shim.c runs this
file's text in its interpreter before cffi loads anything), so it imports
nothing of ``shim`` and nothing heavy: one line saying what was found, what
is needed and the command that fixes it, or "".
"""

import sys

#: dnspython's floor.
DNSPYTHON = "2.9.1"

#: cffi's floor, by the CPython minor version it runs on (a newer CPython:
#: the last row's minor and up).
CFFI = {"3.11": "1.15.1", "3.12": "1.16.0", "3.13": "1.17.0", "3.14": "2.0.0"}


def cffi_floor(minor: str = "") -> str:
    """cffi's floor on CPython ``minor`` ("3.12"; default: this one)."""
    minor = minor or f"{sys.version_info[0]}.{sys.version_info[1]}"
    known = sorted(CFFI, key=lambda v: tuple(map(int, v.split("."))))
    fits = [v for v in known if tuple(map(int, v.split("."))) <= tuple(map(int, minor.split(".")))]
    return CFFI[fits[-1] if fits else known[0]]


def _release(text: str) -> tuple:
    """(2, 9, 1) of "2.9.1", "2.9.1rc1" or "2.9.1.dev0": the release part."""
    parts = []
    for piece in text.split(".")[:3]:
        digits = ""
        for ch in piece:
            if not ch.isdigit():
                break
            digits += ch
        parts.append(int(digits or 0))
        if digits != piece:
            break
    return tuple(parts + [0] * (3 - len(parts)))


def _where(module) -> str:
    path = getattr(module, "__file__", None) or "?"
    return path[:-len("/__init__.py")] if path.endswith("/__init__.py") else path


def _install(python: str, requirement: str, again: bool = False) -> str:
    force = " --force-reinstall" if again else ""
    return f"{python} -m pip install{force} '{requirement}'"


def drift(built_version: str, built_prefix: str, libpython: str) -> str:
    """One line when this interpreter is not the CPython installation the
    library was built with (``built_prefix``, CPython ``built_version``), or
    "".  Another patch release, or another installation, of the same minor
    version keeps the ABI: the library goes on, and says so."""
    import os

    running = sys.version.split()[0]
    prefix = os.path.realpath(sys.base_prefix)
    if running == built_version and prefix == os.path.realpath(built_prefix):
        return ""
    return (f"runs on the CPython installation at {prefix} with libpython {running} "
            f"({libpython}), not on the one it was built with, {built_prefix} with "
            f"{built_version}: the same minor version, so it goes on; rebuild the library "
            "with this Python to silence this")


def on_another_installation(built_prefix: str, python: str = "", origin: str = "") -> str:
    """On another installation of the library's CPython minor version than
    the one it was built with (``built_prefix``): that installation's
    compiled modules (its lib-dynload) go last on sys.path; then one line
    when a compiled module the parser needs is still missing, or "".

    The interpreter's code is the library's libpython, whatever installation
    it runs; an installation whose own libpython builds a module in (Debian
    builds _socket, _struct, math... into libpython3.X) ships no file for it,
    and the library's libpython, which has it as a file, would find none.
    The installation's own files still come first."""
    import os

    if os.path.realpath(sys.base_prefix) == os.path.realpath(built_prefix):
        return ""
    tag = f"{sys.version_info[0]}.{sys.version_info[1]}"
    dynload = os.path.join(os.path.realpath(built_prefix), "lib", f"python{tag}", "lib-dynload")
    if os.path.isdir(dynload) and dynload not in sys.path:
        sys.path.append(dynload)
    return stdlib_problem(python, origin)


#: Modules of the standard library the parser imports (the glue's and
#: dnspython's), each with a compiled part (_socket, _struct, _random,
#: math, binascii...) that an installation may build into its libpython.
STDLIB = ("socket", "struct", "random", "math", "binascii", "bisect", "contextvars")


def stdlib_problem(python: str = "", origin: str = "") -> str:
    """One line when a module of the standard library the parser needs does
    not import in this installation, or ""."""
    python = python or sys.executable or "python3"
    of = f"{python} ({origin})" if origin else python
    for name in STDLIB:
        try:
            __import__(name)
        except ImportError as e:
            missing = e.name or name
            tag = f"{sys.version_info[0]}.{sys.version_info[1]}"
            return (f"the CPython installation at {sys.base_prefix} of {of} has no module "
                    f"{missing} (needed by {name}), and the library's own CPython "
                    f"{sys.version.split()[0]} has no file for it either: set DNS_SHIM_PYTHON to "
                    f"a complete CPython {tag} installation, or rebuild the library with one")
    return ""


def problem(python: str = "", origin: str = "", path=None) -> str:
    """Why this interpreter cannot run the library, in one line, or "".

    python: the python executable to name in the fix (default:
    sys.executable); origin: where it came from ("pinned when the library
    was built", "DNS_SHIM_PYTHON"...), named in the line; path: the module
    search path the library imports from (default: sys.path)."""
    python = python or sys.executable or "python3"
    of = f"{python} ({origin})" if origin else python
    path = list(sys.path if path is None else path)
    searched = ", ".join(p or "." for p in path) or "nothing"
    floor = cffi_floor()
    try:
        import _cffi_backend
    except ImportError as e:
        if e.path:
            # Found, but its file did not load (dlopen's reason: an undefined
            # symbol, a wrong architecture): not a package to install.
            return (f"cffi's backend {e.path} is installed for {of} but does not load ({e}): "
                    f"libpython's symbols must be visible to extension modules, as in a python "
                    f"process; reinstall cffi with this CPython if its file is another's: "
                    f"{_install(python, f'cffi>={floor}', True)}")
        return (f"cffi's backend (_cffi_backend) is not installed for {of}: searched {searched}; "
                f"install it: {_install(python, f'cffi>={floor}')}")
    except Exception as e:  # noqa: BLE001 - a broken installation, said in one line
        return (f"cffi's backend (_cffi_backend) does not import for {of} "
                f"({type(e).__name__}: {e}): reinstall it: {_install(python, f'cffi>={floor}', True)}")
    why = cffi_below_floor(_cffi_backend, python)
    if why:
        return why
    try:
        import dns.version
    except ImportError as e:
        if e.name not in ("dns", "dns.version"):
            return (f"dnspython does not import for {of} ({type(e).__name__}: {e}): reinstall "
                    f"it: {_install(python, f'dnspython>={DNSPYTHON}', True)}")
        return (f"dnspython is not installed for {of}: searched {searched}; install it: "
                f"{_install(python, f'dnspython>={DNSPYTHON}')}")
    except Exception as e:  # noqa: BLE001
        return (f"dnspython does not import for {of} ({type(e).__name__}: {e}): reinstall it: "
                f"{_install(python, f'dnspython>={DNSPYTHON}', True)}")
    return dnspython_below_floor(dns.version, sys.modules["dns"], python)


def cffi_below_floor(backend, python: str = "") -> str:
    """One line when the _cffi_backend module ``backend`` is older than the
    floor, or ""."""
    python = python or sys.executable or "python3"
    floor = cffi_floor()
    found = getattr(backend, "__version__", "0")
    if _release(found) >= _release(floor):
        return ""
    return (f"cffi {found} ({_where(backend)}) is older than {floor}, the oldest this "
            f"library works with on CPython {sys.version_info[0]}.{sys.version_info[1]}: "
            f"upgrade it: {_install(python, f'cffi>={floor}')}")


def dnspython_below_floor(version, package, python: str = "") -> str:
    """One line when dnspython (its ``dns.version`` module and ``dns``
    package) is older than the floor, or ""."""
    python = python or sys.executable or "python3"
    found = getattr(version, "version", "0")
    if _release(found) >= _release(DNSPYTHON):
        return ""
    return (f"dnspython {found} ({_where(package)}) is older than {DNSPYTHON}, "
            f"the oldest this library works with: upgrade it: "
            f"{_install(python, f'dnspython>={DNSPYTHON}')}")
