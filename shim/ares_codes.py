"""The numbers libdnsshim_ares's two halves share: c-ares's return codes and
the kinds of call.

They are the values of ``csrc/ares/dnsshim_ares.h``'s ``DNSSHIM_ARES_*``
defines, which the C half (``csrc/ares/dnsshim_ares.c``) uses; build_ffi.py
refuses to build when the two disagree, and tests/test_ares.py checks the
codes against c-ares's own ``<ares.h>``.  Plain data, no imports: the build
reads it without dnspython.
"""

#: ares.h's ARES_* codes, by name without the prefix.
CODES = {
    "SUCCESS": 0,
    "ENODATA": 1,
    "EFORMERR": 2,
    "ENOTIMP": 5,
    "EBADQUERY": 7,
    "EBADNAME": 8,
    "EBADRESP": 10,
    "ENOMEM": 15,
    "EBADSTR": 17,
    "ENOTINITIALIZED": 21,
}

#: Which c-ares function a call is for (DNSSHIM_ARES_KIND_*).
KINDS = {
    "A": 1, "AAAA": 2, "NS": 3, "PTR": 4, "MX": 5, "TXT": 6, "TXT_EXT": 7, "SRV": 8,
    "NAPTR": 9, "SOA": 10, "CAA": 11, "URI": 12, "EXPAND_NAME": 13, "EXPAND_STRING": 14,
}

#: DNSSHIM_ARES_WANT_HOST: the caller passed a hostent pointer.
WANT_HOST = 1
