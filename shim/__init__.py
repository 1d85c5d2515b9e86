"""dnsshim: DNS response parsing for C programs, done by dnspython.

The package is the Python half of ``libdnsshim.so``:

* :mod:`shim.status`: the status codes and the exceptions that carry them;
* :mod:`shim.decode`: wire bytes to records, pure Python over dnspython,
  with :mod:`shim.rdtable` (which dnspython class parses each class and
  type) and :mod:`shim.match` (a reply against its query);
* :mod:`shim.kinds`: the table of typed record kinds (callback, struct,
  converter, API class, fields), which the glue, the API, both dump tools
  and the library's C (through the build) follow;
* :mod:`shim.glue`: records to the C structs of ``csrc/dns_shim.h`` and the
  program's callbacks (used inside the library through cffi);
* :mod:`shim.api`: ``shim.parse_response(wire)`` for Python programs, the
  same parser and statuses without C;
* :mod:`shim.embedded`: what libdnsshim's init code attaches;
  :mod:`shim.ares_glue` and :mod:`shim.ares_embedded` the same for
  ``libdnsshim_ares.so`` (c-ares's classic parsers), :mod:`shim.ares_codes`
  the numbers its two halves share;
* :mod:`shim.guest`: the loader that, in a Python program, gives the
  library its own private copy of this package and of dnspython (its text
  is compiled into the library); :mod:`shim.requirements`: the floors it
  checks before it starts;
* :mod:`shim.config`: ``dnsshim-config``, the flags a C build needs;
* :mod:`shim.layout`: where each file of every install form goes, which
  the installers, ``dnsshim-config`` and the library's C follow;
* :mod:`shim.sample`: sample responses (the README's, the bundler's probe's);
  :mod:`shim.dump`: ``python -m shim dump``.

The build (the libraries, the installers, the bundle, the firmware object,
the manual) is not here: it lives in the source tree's ``dnsshim_build/``,
which is never installed and never imported by this package.

``import shim`` stays light (the library imports it at start-up): the API's
names are loaded on first use.
"""

__version__ = "1.3.0"

from shim.kinds import api_classes as _api_classes

# The typed record classes are those of the table of kinds (shim.kinds).
_API = {"parse_response", "Response", "Header", "Record", *_api_classes(), "Raw", "Section",
        "EdnsOption", "Query"}
_STATUS = {"Status", "DnsShimError", "MismatchError"}

__all__ = sorted(_API | _STATUS)


def __getattr__(name):
    if name in _API:
        from shim import api
        return getattr(api, name)
    if name in _STATUS:
        from shim import status
        return getattr(status, name)
    raise AttributeError(f"module 'shim' has no attribute {name!r}")
