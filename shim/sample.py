"""Sample responses, built with dnspython's own message builder.

    python -m shim.sample [FILE]      (default: write the bytes to stdout)

A phone looking for its P-CSCF asks for the NAPTR records of its IMS domain
(3GPP TS 24.229, RFC 3263); the answer names SRV records, and the additional
section carries those SRV records and the AAAA and A addresses of their
targets.  This is the message the README's first command prints through the
C demo, and a fixture of the tests.

:func:`probe_messages` are the responses, good and malformed, that reach
every path of the library: what the bundler runs it over.
"""

import sys

import dns.flags
import dns.message
import dns.rrset

DOMAIN = "ims.mnc001.mcc001.3gppnetwork.org."

ANSWER = [
    (DOMAIN, 300, "NAPTR", f'10 50 "s" "SIP+D2T" "" _sip._tcp.{DOMAIN}'),
    (DOMAIN, 300, "NAPTR", f'20 50 "s" "SIP+D2U" "" _sip._udp.{DOMAIN}'),
]
ADDITIONAL = [
    (f"_sip._tcp.{DOMAIN}", 300, "SRV", f"10 60 5060 pcscf1.{DOMAIN}"),
    (f"_sip._tcp.{DOMAIN}", 300, "SRV", f"20 40 5060 pcscf2.{DOMAIN}"),
    (f"_sip._udp.{DOMAIN}", 300, "SRV", f"10 100 5060 pcscf1.{DOMAIN}"),
    (f"pcscf1.{DOMAIN}", 3600, "AAAA", "2001:db8:1::10"),
    (f"pcscf1.{DOMAIN}", 3600, "AAAA", "2001:db8:1::11"),
    (f"pcscf2.{DOMAIN}", 3600, "AAAA", "2001:db8:2::10"),
    (f"pcscf1.{DOMAIN}", 3600, "A", "192.0.2.10"),
]


def ims_response() -> dns.message.Message:
    query = dns.message.make_query(DOMAIN, "NAPTR", use_edns=0, payload=1232, want_dnssec=False)
    query.id = 0x4E41
    response = dns.message.make_response(query)
    response.flags |= dns.flags.AA | dns.flags.RA
    response.use_edns(0, payload=1232)
    # One RRset per record, so that the order on the wire is the order here.
    for section, records in ((response.answer, ANSWER), (response.additional, ADDITIONAL)):
        for name, ttl, rdtype, text in records:
            section.append(dns.rrset.from_text(name, ttl, "IN", rdtype, text))
    return response


def ims_wire() -> bytes:
    return ims_response().to_wire()


def probe_messages() -> tuple:
    """({name: wire}, {name: wire}): good responses that reach every typed
    converter, OPT and its options, TSIG, an unknown type, another class;
    and malformed ones (the error paths).  What the bundler runs the
    library over to learn which modules it imports (dnsshim_build/bundle.py)."""
    import dns.message
    import dns.rcode
    import dns.rrset
    import dns.tsig
    import dns.tsigkeyring

    def response(records, **kw):
        query = dns.message.make_query("example.com.", "A", use_edns=0)
        resp = dns.message.make_response(query)
        for section, rdclass, rdtype, text in records:
            getattr(resp, section).append(
                dns.rrset.from_text("example.com.", 300, rdclass, rdtype, text))
        return resp.to_wire(**kw)

    typed = [("answer", "IN", "A", "192.0.2.1"), ("answer", "IN", "AAAA", "2001:db8::1"),
             ("answer", "IN", "CNAME", "a.example."), ("answer", "IN", "DNAME", "d.example."),
             ("answer", "IN", "PTR", "p.example."), ("answer", "IN", "MX", "10 mx.example."),
             ("answer", "IN", "TXT", '"a" "b"'), ("answer", "IN", "CAA", '0 issue "ca"'),
             ("answer", "IN", "SRV", "1 2 3 s.example."),
             ("answer", "IN", "NAPTR", '1 2 "s" "SIP+D2U" "" _sip.example.'),
             ("answer", "IN", "TYPE65280", r"\# 2 abcd"), ("answer", "CH", "TXT", '"ch"'),
             ("answer", "IN", "DS", "1 13 2 " + "ab" * 32),
             ("authority", "IN", "NS", "ns.example."),
             ("authority", "IN", "SOA", "ns.example. h.example. 1 2 3 4 5")]
    keyring = dns.tsigkeyring.from_text({"key.": "c2VjcmV0"})
    query = dns.message.make_query("example.com.", "A")
    query.use_tsig(keyring, keyname="key.")
    signed = dns.message.make_response(query)
    signed.use_tsig(keyring, keyname="key.")
    import dns.edns

    options = dns.message.make_response(dns.message.make_query("example.com.", "A"))
    options.use_edns(0, options=[dns.edns.ECSOption("192.0.2.0", 24),
                                 dns.edns.CookieOption(bytes(range(1, 9)), bytes(8)),
                                 dns.edns.EDEOption(dns.edns.EDECode.PROHIBITED, "x"),
                                 dns.edns.GenericOption(12, b"\0\0")])
    good = {"ims": ims_wire(), "typed": response(typed), "tsig": signed.to_wire(),
            "options": options.to_wire(),
            "nxdomain": dns.message.make_response(dns.message.make_query("x.", "A")).to_wire()}
    bad = {"short": b"\x00" * 5, "pointer_loop": good["typed"][:12] + b"\xc0\x0c",
           "rdlength": good["typed"][:-1]}
    return good, bad


def main(argv=None) -> int:
    """``python -m shim.sample [FILE]``: the sample IMS response's bytes."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m shim.sample",
                                     description="Write a sample IMS-style DNS response "
                                                 "(NAPTR answers, SRV and AAAA additional "
                                                 "records), as wire bytes.")
    parser.add_argument("file", nargs="?", default="-",
                        help="where to write it (default, or -: standard output)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    wire = ims_wire()
    if args.file != "-":
        try:
            with open(args.file, "wb") as f:
                f.write(wire)
        except OSError as e:
            # One line, as the tools say it: the path, then why.
            print(f"python -m shim.sample: cannot write {args.file}: {e.strerror}",
                  file=sys.stderr)
            return 1
    else:
        sys.stdout.buffer.write(wire)
    return 0


if __name__ == "__main__":
    sys.exit(main())
