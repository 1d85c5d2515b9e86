"""dnsshim: DNS response parsing for C programs, done by dnspython.

The package is the Python half of ``libdnsshim.so``:

* :mod:`shim.status`: the status codes and the exceptions that carry them;
* :mod:`shim.decode`: wire bytes to records, pure Python over dnspython;
* :mod:`shim.glue`: records to the C structs of ``csrc/dns_shim.h`` and the
  program's callbacks (used inside the library through cffi).
"""

__version__ = "1.0.0"
