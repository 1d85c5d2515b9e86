"""One well-formed RDATA for every type dnspython implements, in its text form.

Keyed by type mnemonic; :func:`wire` turns each into the uncompressed wire
form with dnspython's own parser of class IN (or CH for ``CH A``), so the
bytes are exact and the text says what they hold.  The history tests put
these bytes under every kind of class: under IN they parse with the IN
module, under any other class with the class-independent module or as
generic bytes (shim/rdtable.py says which).
"""

import dns.rdata
import dns.rdataclass
import dns.rdatatype

TEXT = {
    # Class IN only (dns/rdtypes/IN/).
    "A": "192.0.2.1",
    "AAAA": "2001:db8::1",
    "APL": "1:192.0.2.0/24 !2:2001:db8::/32",
    "DHCID": "AAIBY2/AuCccgoJbsaxcQc9TUapptP69lOjxfNuVAA2kjEA=",
    "HTTPS": '1 . alpn="h2,h3" port=8443 ipv4hint=192.0.2.1',
    "IPSECKEY": "10 1 2 192.0.2.38 AQNRU3mG7TVTO2BkR47usntb102uFJtugbo6BSGvgqt4AQ==",
    "KX": "10 kx.example.",
    "NAPTR": '100 10 "u" "E2U+sip" "!^.*$!sip:info@example.com!" .',
    "NSAP": "0x47000580005a0000000001e133ffffff00016100",
    "NSAP_PTR": "nsap-ptr.example.",
    "PX": "10 map822.example. mapx400.example.",
    "SRV": "1 2 5060 sip.example.",
    "SVCB": '1 svc.example. alpn="dot" port=853',
    "WKS": "192.0.2.1 6 25 80",
    # Class-independent (dns/rdtypes/ANY/).
    "AFSDB": "1 afsdb.example.",
    "AMTRELAY": "10 0 1 203.0.113.15",
    "AVC": '"app-name:WOLFGANG|app-class:OAM|business=yes"',
    "BRID": "AAECAwQFBgc=",
    "CAA": '0 issue "ca.example.net"',
    "CDNSKEY": "257 3 13 mdsswUyr3DPW132mOi8V9xESWE8jTo0dxCjjnopKl+GqJxpVXckHAeF+KkxLbxILfDLUT0rAK9iUzy1L53eKGQ==",
    "CDS": "60485 5 1 2BB183AF5F22588179A53B0A98631FAD1A292118",
    "CERT": "PKIX 0 0 MIIBIjANBgkqhkiG",
    "CNAME": "target.example.",
    "CSYNC": "66 3 A NS AAAA",
    "DLV": "60485 5 1 2BB183AF5F22588179A53B0A98631FAD1A292118",
    "DNAME": "other.example.",
    "DNSKEY": "257 3 13 mdsswUyr3DPW132mOi8V9xESWE8jTo0dxCjjnopKl+GqJxpVXckHAeF+KkxLbxILfDLUT0rAK9iUzy1L53eKGQ==",
    "DS": "60485 5 1 2BB183AF5F22588179A53B0A98631FAD1A292118",
    "DSYNC": "CDS NOTIFY 5359 cds-scanner.example.",
    "EUI48": "00-00-5e-00-53-2a",
    "EUI64": "00-00-5e-ef-10-00-00-2a",
    "GPOS": "-32.6882 116.8652 10.0",
    "HHIT": "AAECAwQFBgc=",
    "HINFO": '"PC" "Linux"',
    "HIP": "2 200100107B1A74DF365639CC39F1D578 AwEAAbdxyhNuSutc5EMzxTs9LBPCIkOFH8cIvM4p9+LrV4e19WzK00+CI6zBCQTdtWsuxKbWIy87UOoJTwkUs7lBu+Upr1gsNrut79ryra+bSRGQb1slImA8YVJyuIDsj7kwzG7jnERNqnWxZ48AWkskmdHaVDP4BcelrTI3rMXdXF5D rvs.example.",
    "ISDN": '"150862028003217" "004"',
    "KEY": "256 3 13 mdsswUyr3DPW132mOi8V9xESWE8jTo0dxCjjnopKl+GqJxpVXckHAeF+KkxLbxILfDLUT0rAK9iUzy1L53eKGQ==",
    "L32": "10 10.1.2.0",
    "L64": "10 2001:0DB8:1140:1000",
    "LOC": "60 9 0.000 N 24 39 0.000 E 10.00m 20.00m 2000.00m 20.00m",
    "LP": "10 l64-subnet.example.",
    "MX": "10 mail.example.",
    "NID": "10 0014:4fff:ff20:ee64",
    "NINFO": '"first" "second"',
    "NS": "ns1.example.",
    "NSEC": "next.example. A MX RRSIG NSEC TYPE1234",
    "NSEC3": "1 1 12 aabbccdd 2vptu5timamqttgl4luu9kg21e0aor3s A RRSIG",
    "NSEC3PARAM": "1 0 12 aabbccdd",
    "OPENPGPKEY": "mQINBFit2jsBEADrbl5vjVxYeAE0g0IDYCBpHirv1Sjlqxx5gjtPhb2YhvyDMXjq",
    "OPT": None,  # an OPT record is the header's, never a record (see rdata())
    "PTR": "host.example.",
    "RESINFO": "qnamemin exterr=15,16,17 infourl=https://resolver.example.com/guide",
    "RP": "mbox.example. txt.example.",
    "RRSIG": "A 13 2 300 20260101000000 20251201000000 12345 example. "
             "oJB1W6WNGv+ldvQ3WDG0MQkg5IEhjRip8WTrPYGv07h108dUKGMeDPKijVCHX3DDKdfb+v6oB9wfuh3DTJXUAfI/M0zmO/zz8bW0Rznl8O3tGNazPwQKkRN20XPXV6nwwfoXmJQbsLNrLfkGJ5D6fwFm8nN+6pBzeDQfsS3Ap3o=",
    "RT": "10 relay.example.",
    "SIG": "A 13 2 300 20260101000000 20251201000000 12345 example. "
           "oJB1W6WNGv+ldvQ3WDG0MQkg5IEhjRip8WTrPYGv07h108dUKGMeDPKijVCHX3DDKdfb+v6oB9wfuh3DTJXUAfI/M0zmO/zz8bW0Rznl8O3tGNazPwQKkRN20XPXV6nwwfoXmJQbsLNrLfkGJ5D6fwFm8nN+6pBzeDQfsS3Ap3o=",
    "SMIMEA": "3 1 1 d2abde240d7cd3ee6b4b28c54df034b97983a1d16e8a410e4561cb106618e971",
    "SOA": "ns1.example. hostmaster.example. 2024010101 7200 3600 1209600 300",
    "SPF": '"v=spf1 -all"',
    "SSHFP": "4 2 123456789abcdef67890123456789abcdef67890123456789abcdef123456789",
    "TKEY": "gss-tsig. 1700000000 1700003600 3 0 AAEC",
    "TLSA": "3 1 1 d2abde240d7cd3ee6b4b28c54df034b97983a1d16e8a410e4561cb106618e971",
    "TSIG": None,  # only as the last record of class ANY: malformed.TSIG
    "TXT": '"v=spf1 -all" "second"',
    "URI": '10 1 "https://example.com/"',
    "WALLET": '"BTC" "bc1qexample"',
    "X25": '"311061700956"',
    "ZONEMD": "2018031500 1 1 "
              "FEBE3D4CE2EC2FFA4BA99D46CD69D6D29711E55217057BEE7EB1A7B641A47BA7FED2DD5B97AE499F"
              "AFA4F22C6BD647DE",
}

#: Types dnspython knows by name but implements with no module of its own:
#: their RDATA is generic bytes under every class.
GENERIC = ("MD", "MF", "MB", "MG", "MR", "NULL", "MINFO", "NXT", "A6", "UNSPEC", "NXNAME", "TA")


def wire(mnemonic: str) -> bytes:
    """The sample's RDATA, uncompressed wire form."""
    text = TEXT.get(mnemonic)
    rdtype = dns.rdatatype.RdataType[mnemonic]
    if text is None:
        return b"\x01\x02\x03\x04"  # GENERIC types: any octets
    return dns.rdata.from_text(dns.rdataclass.IN, rdtype, text).to_wire()


def every_type() -> dict:
    """{type value: sample RDATA} for every type dnspython knows by name,
    but OPT, TSIG and the query-only types."""
    out = {}
    for name in list(TEXT) + list(GENERIC):
        if name in TEXT and TEXT[name] is None:
            continue
        out[int(dns.rdatatype.RdataType[name])] = wire(name)
    return out
