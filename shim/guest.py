"""The library's own Python side, loaded privately into a Python program.

libdnsshim runs its parser in an interpreter it starts itself (a C
program) or, loaded into a process that already runs Python (a ctypes or
cffi program, pycares with libdnsshim_ares in place of c-ares's parsers),
in that program's interpreter.  There it is a guest, not a tenant: this
module loads the library's own ``shim`` package, its own dnspython and its
own ``_cffi_backend`` from the library's own installation, and leaves the
program's ``sys.path``, ``sys.meta_path``, ``sys.path_importer_cache`` and
every ``sys.modules`` entry it has or will have as they were.

How (the C side, csrc/lib/dns_shim.c, runs this file's text, compiled into
the library, in a fresh namespace, then calls :func:`start`):

* The private path is what the library's own interpreter would search for
  anything that is not the standard library: the package root it was built
  for, then the site-packages of its pinned Python (a virtualenv's, with
  the directories its ``.pth`` files name).  The standard library is the
  program's own (the same CPython minor version: the C side checks).
* Every privately loaded module is executed with a private ``__builtins__``
  dict whose ``__import__`` is :meth:`Guest.__import__`; the IMPORT_NAME
  opcode takes ``__import__`` from the frame's builtins, and a function
  keeps its module's builtins, so imports at call time inside dnspython and
  shim (``import dns.rdata`` in a function) resolve privately too.
* A top-level name of the standard library (``sys.stdlib_module_names``,
  built-in modules) and the library's own cffi modules (``_dnsshim_*``, which
  cffi registers itself) come from the program, as any module would; every
  other name (``dns``, ``shim``, ``_cffi_backend``, and whatever they
  import that is not the standard library) is found on the private path
  only, with FileFinders of our own, and kept in :attr:`Guest.modules`,
  under its real name (``dns.name``), never in ``sys.modules``.
* ``importlib.import_module`` (shim.rdtable, dns.rdata) and
  ``importlib.metadata.version`` (dns._features, asking which optional
  packages are installed) are answered for the private path: a private
  module that imports ``importlib`` gets a view of it that routes those two.
* Extension modules (``_cffi_backend``) are loaded under the private name
  ``_dnsshim_guest.<name>``: CPython 3.11 puts a single-phase extension
  module (cffi's backend is one) into ``sys.modules`` under the name it is
  loaded as, so the program's ``_cffi_backend`` entry is never touched,
  and the private entry is removed at once.  cffi's generated C imports
  its backend with ``PyImport_ImportModule("_cffi_backend")``: the build
  points that call, and the builtins the init code runs with, at this
  guest (csrc/lib/dns_shim_cffi_guest.h says how).

Nothing here imports anything but the standard library: it is the loader.
"""

import _thread
import builtins as _builtins
import importlib as _importlib
import importlib.machinery as _machinery
import importlib.util as _util
import os
import sys
import types

#: The prefix of the names extension modules are loaded under.
PRIVATE_PREFIX = "_dnsshim_guest."

#: Loaded at start, so that what cannot be loaded is said once, at start.
PRELOAD = ("shim.embedded", "shim.glue")


class GuestError(ImportError):
    """What stops the library loading its own Python side: one line."""


class PackageNotFoundError(ModuleNotFoundError):
    """importlib.metadata's, for the private path: no such distribution."""


def _normal(name):
    return name.lower().replace("-", "_").replace(".", "_")


def _debian_site(prefix, tag):
    """Is the standard library under ``prefix`` Debian's, whose ``site``
    module puts dist-packages directories on the path?"""
    try:
        with open(os.path.join(prefix, "lib", f"python{tag}", "site.py"), encoding="utf-8") as f:
            return "dist-packages" in f.read()
    except (OSError, UnicodeDecodeError):
        return False


def _prefix_sites(prefix, tag, virtual, debian):
    """``site.getsitepackages()`` for one prefix: lib/pythonX.Y/site-packages;
    with Debian's ``site`` that one only in a virtual environment, then
    local/lib/pythonX.Y/dist-packages, lib/python3/dist-packages and
    lib/pythonX.Y/dist-packages."""
    sites = [os.path.join(prefix, "lib", f"python{tag}", "site-packages")]
    if debian:
        sites = sites[:virtual] + [os.path.join(prefix, "local", "lib", f"python{tag}",
                                                "dist-packages"),
                                   os.path.join(prefix, "lib", "python3", "dist-packages"),
                                   os.path.join(prefix, "lib", f"python{tag}", "dist-packages")]
    return sites


def _venv(python):
    """(the virtualenv's folder, its pyvenv.cfg settings) of the CPython
    ``python``, or None when it is not a virtualenv's."""
    bindir = os.path.dirname(os.path.abspath(python))
    for cfg in (os.path.join(bindir, "pyvenv.cfg"),
                os.path.join(os.path.dirname(bindir), "pyvenv.cfg")):
        if os.path.isfile(cfg):
            settings = {}
            with open(cfg, encoding="utf-8") as f:
                for line in f:
                    key, eq, value = line.partition("=")
                    if eq:
                        settings[key.strip().lower()] = value.strip()
            return os.path.dirname(cfg), settings
    return None


def site_dirs(python, tag):
    """The site-packages directories of the CPython ``python`` (a path),
    as its own ``site`` module would set them in an isolated interpreter:
    a virtualenv's (and its base's with include-system-site-packages), or
    its prefix's, Debian's dist-packages included where its ``site`` is
    Debian's (:func:`_prefix_sites`); then the directories named by their
    ``.pth`` files (lines that are not ``import`` lines)."""
    return _site_dirs(python, tag, _venv(python))


def _site_dirs(python, tag, venv):
    """:func:`site_dirs`, with ``python``'s :func:`_venv` read."""
    sites = []
    if venv is not None:
        folder, settings = venv
        base = os.path.dirname(os.path.realpath(settings["home"])) \
            if settings.get("home") else ""
        debian = bool(base) and _debian_site(base, tag)
        sites.extend(_prefix_sites(folder, tag, True, debian))
        if settings.get("include-system-site-packages", "").lower() == "true" and base:
            sites.extend(_prefix_sites(base, tag, True, debian))
    else:
        prefix = os.path.dirname(os.path.dirname(os.path.realpath(python)))
        sites.extend(_prefix_sites(prefix, tag, False, _debian_site(prefix, tag)))
    found = []
    for site in sites:
        if not os.path.isdir(site) or site in found:
            continue
        found.append(site)
        try:
            names = sorted(n for n in os.listdir(site) if n.endswith(".pth"))
        except OSError:
            continue
        for name in names:
            try:
                with open(os.path.join(site, name), encoding="utf-8") as f:
                    lines = f.read().splitlines()
            except (OSError, UnicodeDecodeError):
                continue
            for line in lines:
                line = line.rstrip()
                if not line or line.startswith(("#", "import ", "import\t")):
                    continue
                path = os.path.join(site, line)
                if os.path.isdir(path):
                    found.append(os.path.abspath(path))
    return found


def owned_site(python, tag):
    """In an interpreter the library starts itself, what its Python's
    ``site`` module would add, without running ``site``: the runtime then
    runs no code of the installation's (no ``.pth`` import line, no
    sitecustomize) and looks up no home directory.  A virtualenv's folder
    becomes ``sys.prefix`` and ``sys.exec_prefix``, and :func:`site_dirs`
    go at the end of ``sys.path``, as ``site`` puts them."""
    venv = _venv(python)
    if venv is not None:
        sys.prefix = sys.exec_prefix = venv[0]
    for entry in _site_dirs(python, tag, venv):
        if entry not in sys.path:
            sys.path.append(entry)


def private_path(root, python, tag, bundle_home=""):
    """Where the library's own interpreter finds what is not the standard
    library: the package root (build_ffi.py's DNS_SHIM_DEFAULT_ROOT, or the
    site-packages an installed library sits in), then its Python's site
    directories; a bundle's lib/pythonX.Y alone."""
    if bundle_home:
        path = [os.path.join(bundle_home, "lib", f"python{tag}"),
                os.path.join(bundle_home, "lib", f"python{tag}", "lib-dynload")]
    else:
        path = ([root] if root else []) + (site_dirs(python, tag) if python else [])
    unique = []
    for entry in path:
        entry = os.path.abspath(entry)
        if entry not in unique and os.path.isdir(entry):
            unique.append(entry)
    return unique


class Guest:
    """A private import system over ``path``: the modules the library loads
    for itself (:attr:`modules`), the builtins they run with
    (:attr:`builtins`), and its own cffi backend (:attr:`backend`)."""

    def __init__(self, path):
        self.path = list(path)
        self.modules = {}
        self._initializing = set()
        self._lock = _thread.RLock()
        self._finders = {}
        self._private = {}  # top-level name -> loaded privately?
        self._host_import = _builtins.__import__
        self._stdlib = frozenset(sys.stdlib_module_names) | frozenset(sys.builtin_module_names)
        self._loader_details = (
            (_machinery.ExtensionFileLoader, _machinery.EXTENSION_SUFFIXES),
            (_machinery.SourceFileLoader, _machinery.SOURCE_SUFFIXES),
            (_machinery.SourcelessFileLoader, _machinery.BYTECODE_SUFFIXES),
        )
        self.builtins = dict(vars(_builtins))
        self.builtins["__import__"] = self.__import__
        self.importlib = _ImportlibView(self)
        self.backend = None

    # ---- which names are ours --------------------------------------------------

    def is_private(self, top):
        """Is the top-level name ``top`` loaded from the private path?"""
        private = self._private.get(top)
        if private is None:
            private = self._private[top] = not (top in self._stdlib
                                                or top.startswith("_dnsshim_"))
        return private

    # ---- loading ---------------------------------------------------------------

    def _finder(self, entry):
        finder = self._finders.get(entry)
        if finder is None:
            finder = self._finders[entry] = _machinery.FileFinder(entry, *self._loader_details)
        return finder

    def _find_spec(self, name, path):
        portions = []
        for entry in path:
            spec = self._finder(entry).find_spec(name)
            if spec is None:
                continue
            if spec.loader is not None:
                return spec
            portions.extend(spec.submodule_search_locations or ())
        if portions:  # a namespace package
            spec = _machinery.ModuleSpec(name, None, is_package=True)
            spec.submodule_search_locations = portions
            return spec
        return None

    def _create(self, spec):
        """The module of ``spec`` under its private name (PRIVATE_PREFIX +
        its name): its ``__name__``, ``__spec__`` and ``__package__`` say so,
        and so does every class it defines (``__module__``)."""
        private = PRIVATE_PREFIX + spec.name
        if spec.loader is None:  # a namespace package
            module = types.ModuleType(private)
            module.__spec__ = _machinery.ModuleSpec(private, None, is_package=True)
            module.__spec__.submodule_search_locations = list(spec.submodule_search_locations)
            module.__path__ = module.__spec__.submodule_search_locations
            module.__package__ = private
            return module
        loader = type(spec.loader)(private, spec.origin)
        private_spec = _util.spec_from_file_location(
            private, spec.origin, loader=loader,
            submodule_search_locations=spec.submodule_search_locations)
        # An extension module is created here (_imp.create_dynamic): a
        # single-phase one puts itself into sys.modules under the private
        # name, which _load takes out again.
        module = _util.module_from_spec(private_spec)
        if not isinstance(loader, _machinery.ExtensionFileLoader):
            module.__builtins__ = self.builtins
        return module

    def _load(self, name):
        module = self.modules.get(name)
        if module is not None and name not in self._initializing:
            return module
        with self._lock:
            module = self.modules.get(name)
            if module is not None:  # loaded meanwhile, or a cycle in this thread
                return module
            parent, _, child = name.rpartition(".")
            if parent:
                package = self._load(parent)
                if name in self.modules:  # the parent's code imported it
                    return self.modules[name]
                path = getattr(package, "__path__", None)
                if path is None:
                    raise ModuleNotFoundError(f"No module named {name!r}; {parent!r} is not a "
                                              "package", name=name)
            else:
                path = self.path
            spec = self._find_spec(name, path)
            if spec is None:
                raise ModuleNotFoundError(f"No module named {name!r} in the library's own "
                                          f"installation ({os.pathsep.join(self.path)})",
                                          name=name)
            private = PRIVATE_PREFIX + name
            had = sys.modules.get(private)
            self._initializing.add(name)
            try:
                module = self._create(spec)
                self.modules[name] = module
                # While its code runs, the module is in sys.modules under its
                # private name, as importlib has a module there: dataclasses
                # looks up sys.modules[cls.__module__] for string annotations
                # (dns.name's NameStyle has one).  Never under its real name.
                sys.modules[private] = module
                if spec.loader is not None:
                    module.__spec__.loader.exec_module(module)
                module = self.modules[name] = sys.modules.get(private, module)
            except BaseException:
                self.modules.pop(name, None)
                raise
            finally:
                self._initializing.discard(name)
                if had is None:
                    sys.modules.pop(private, None)
                else:
                    sys.modules[private] = had
            if parent:
                setattr(self.modules[parent], child, module)
            return module

    def import_module(self, name, package=None):
        """importlib.import_module, for private modules: the module itself."""
        if name.startswith("."):
            if not package:
                raise TypeError("the 'package' argument is required to perform a relative "
                                f"import for {name!r}")
            level = len(name) - len(name.lstrip("."))
            name = _public(_resolve_name(name[level:], package, level))
        if self.is_private(name.partition(".")[0]):
            return self._load(name)
        return _importlib.import_module(name)

    # ---- the private modules' __import__ -------------------------------------------

    def __import__(self, name, globals=None, locals=None, fromlist=(), level=0):
        if level == 0:
            module = self.modules.get(name)
            if module is not None and name not in self._initializing:
                if not fromlist:
                    return self.modules[name.partition(".")[0]]
                if not hasattr(module, "__path__"):
                    return module
                return self._fromlist(module, name, fromlist)
            absolute = name
        else:
            absolute = _public(_resolve_name(name, _calc_package(globals or {}), level))
        top = absolute.partition(".")[0]
        if not self.is_private(top):
            if top == "importlib":
                return self._importlib(absolute, fromlist)
            return self._host_import(name, globals, locals, fromlist, level)
        module = self._load(absolute)
        if not fromlist:
            if level == 0:
                return self._load(top)
            if not name:
                return module
            cut = len(name) - len(name.partition(".")[0])
            return self.modules[absolute[:len(absolute) - cut]]
        if hasattr(module, "__path__"):
            return self._fromlist(module, absolute, fromlist)
        return module

    def _fromlist(self, module, name, fromlist, recursive=False):
        for item in fromlist:
            if not isinstance(item, str):
                raise TypeError(f"Item in {name}.__all__ must be str, not "
                                f"{type(item).__name__}")
            if item == "*":
                if not recursive and hasattr(module, "__all__"):
                    self._fromlist(module, name, module.__all__, recursive=True)
            elif not hasattr(module, item):
                try:
                    self._load(f"{name}.{item}")
                except ModuleNotFoundError as exc:
                    if exc.name == f"{name}.{item}":
                        continue  # "from package import name" will say it
                    raise
        return module

    def _importlib(self, name, fromlist):
        """``importlib`` for private modules: the view that routes
        import_module and metadata.version; its other submodules are the
        program's (the standard library)."""
        view = self.importlib
        if name == "importlib.metadata":
            return view.metadata if fromlist else view
        if name != "importlib":
            module = self._host_import(name, None, None, fromlist, 0)
            return module if fromlist else view
        for item in fromlist or ():
            if item not in ("import_module", "metadata") and not hasattr(_importlib, item):
                self._host_import(f"importlib.{item}")
        return view

    # ---- importlib.metadata.version for the private path -------------------------

    def version(self, name):
        """The version of the distribution ``name`` installed on the private
        path, read from its ``NAME-VERSION.dist-info`` folder (importlib.metadata
        reads the metadata file where the folder's name does not say)."""
        wanted = _normal(name)
        for entry in self.path:
            try:
                items = os.listdir(entry)
            except OSError:
                continue
            for item in items:
                stem, _, suffix = item.rpartition(".")
                if suffix not in ("dist-info", "egg-info"):
                    continue
                dist, _, found = stem.partition("-")
                if _normal(dist) != wanted:
                    continue
                if suffix == "dist-info" and found:
                    return found
                import importlib.metadata

                return importlib.metadata.PathDistribution(
                    importlib.metadata.Path(entry, item)).version
        raise PackageNotFoundError(name)


class _ImportlibView(types.ModuleType):
    """What ``import importlib`` gives a private module."""

    def __init__(self, guest):
        super().__init__("importlib", _importlib.__doc__)
        self.import_module = guest.import_module
        self.metadata = _MetadataView(guest)

    def __getattr__(self, name):
        return getattr(_importlib, name)


class _MetadataView(types.ModuleType):
    """What ``importlib.metadata`` is for a private module: ``version`` for the
    private path; anything else is the standard library's."""

    def __init__(self, guest):
        super().__init__("importlib.metadata")
        self.version = guest.version
        self.PackageNotFoundError = PackageNotFoundError

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        import importlib.metadata

        return getattr(importlib.metadata, name)


def _public(name):
    """The real name of a private module's name."""
    return name[len(PRIVATE_PREFIX):] if name.startswith(PRIVATE_PREFIX) else name


def _calc_package(globals):
    package = globals.get("__package__")
    if package is not None:
        return package
    spec = globals.get("__spec__")
    if spec is not None:
        return spec.parent
    package = globals["__name__"]
    if "__path__" not in globals:
        package = package.rpartition(".")[0]
    return package


def _resolve_name(name, package, level):
    bits = package.rsplit(".", level - 1)
    if len(bits) < level:
        raise ImportError("attempted relative import beyond top-level package")
    base = bits[0]
    return f"{base}.{name}" if name else base


def _one_line(exc):
    text = str(exc).strip().replace("\n", " ")
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def start(root, python, tag, bundle_home=""):
    """The guest of a library built for CPython ``tag`` whose package root is
    ``root`` and whose Python is ``python``: its backend loaded and
    :data:`PRELOAD` imported.  Raises :class:`GuestError` with one line."""
    path = private_path(root, python, tag, bundle_home)
    if not path:
        raise GuestError(f"none of its own folders exists (package root {root!r}, Python "
                         f"{python!r})")
    guest = Guest(path)
    try:
        guest.backend = guest.import_module("_cffi_backend")
    except Exception as exc:
        raise GuestError(f"its cffi backend cannot be loaded from its own installation "
                         f"({os.pathsep.join(path)}): {_one_line(exc)}") from None
    try:
        requirements = guest.import_module("shim.requirements")
        why = requirements.cffi_below_floor(guest.backend, python)
        if not why:
            why = requirements.dnspython_below_floor(guest.import_module("dns.version"),
                                                     guest.import_module("dns"), python)
    except Exception as exc:
        raise GuestError(f"its dnspython cannot be loaded from its own installation "
                         f"({os.pathsep.join(path)}): {_one_line(exc)}") from None
    if why:
        raise GuestError(why)
    for name in PRELOAD:
        try:
            guest.import_module(name)
        except Exception as exc:
            raise GuestError(f"{name} cannot be loaded from its own installation "
                             f"({os.pathsep.join(path)}): {_one_line(exc)}") from None
    return guest
