"""The build and packaging of dnsshim: never installed, never imported by the
runtime package ``shim`` (which the build reads: its status table, its
requirements, its table of kinds).  ``build_ffi.py`` at the top of the tree
is the entry point; its docstring lists the modules."""
