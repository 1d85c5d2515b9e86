"""A sample IMS-style response, built with dnspython's own message builder.

    python -m shim.sample [FILE]      (default: write the bytes to stdout)

A phone looking for its P-CSCF asks for the NAPTR records of its IMS domain
(3GPP TS 24.229, RFC 3263); the answer names SRV records, and the additional
section carries those SRV records and the AAAA and A addresses of their
targets.  This is the message the README's first command prints through the
C demo, and a fixture of the tests.
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


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    wire = ims_wire()
    if argv and argv[0] != "-":
        with open(argv[0], "wb") as f:
            f.write(wire)
    else:
        sys.stdout.buffer.write(wire)
    return 0


if __name__ == "__main__":
    sys.exit(main())
