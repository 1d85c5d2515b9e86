"""Callbacks made in Python with ffi.callback, for tests that call through
the C ABI: each call is logged in the same line format dnsshim_test prints
(and reference.expected_log computes), copied out while the pointers are
valid."""

TARGETS = {"on_cname": "cname", "on_ns": "ns", "on_ptr": "ptr", "on_dname": "dname"}


class Recorder:
    """A dns_shim_callbacks struct whose callbacks log what they get.

    only: the members to set (default: all); stop_at: the Nth call returns
    `result` instead of 0.
    """

    def __init__(self, ffi, sections=7, only=None, stop_at=0, result=1):
        self.ffi = ffi
        self.calls = []  # (member, line)
        self.stop_at = stop_at
        self.result = result
        self._keep = []
        init = {"struct_size": ffi.sizeof("dns_shim_callbacks"), "sections": sections}
        # Every callback member of the header's struct, with its own type.
        for member, field in ffi.typeof("dns_shim_callbacks").fields:
            if not member.startswith("on_") or only is not None and member not in only:
                continue
            cb = ffi.callback(field.type, self._make(member))
            self._keep.append(cb)
            init[member] = cb
        self.struct = ffi.new("dns_shim_callbacks *", init)

    @property
    def lines(self):
        return [line for _, line in self.calls]

    def _make(self, member):
        def callback(ctx, record):
            self.calls.append((member, self.line(member, record)))
            if self.stop_at and len(self.calls) == self.stop_at:
                return self.result
            return 0
        return callback

    # ---- the dnsshim_test line format ---------------------------------------

    def _s(self, p):
        return self.ffi.string(p).decode("ascii")

    def _bytes(self, b):
        data = self.ffi.buffer(b.data, b.len + 1)[:]
        assert data[-1:] == b"\0", "data[len] must be a NUL"
        return data[:-1].hex()

    def _rr(self, kind, rr):
        return (f"{kind} sec={rr.section} idx={rr.index} owner={self._s(rr.owner)} type={rr.type} "
                f"class={rr.rclass} ttl={rr.ttl}")

    def line(self, member, r):
        if member == "on_header":
            qname = self._s(r.qname) if r.qname != self.ffi.NULL else "<NULL>"
            return (f"header id={r.id} flags={r.flags} opcode={r.opcode} rcode={r.rcode} "
                    f"qd={r.qdcount} an={r.ancount} ns={r.nscount} ar={r.arcount} qname={qname} "
                    f"qtype={r.qtype} qclass={r.qclass} edns={r.edns_version} "
                    f"payload={r.edns_payload} do={r.edns_do} eflags={r.edns_flags}")
        if member == "on_edns_option":
            b = self._bytes
            return (f"edns_option code={r.code} data={b(r.data)} ede={r.ede_info_code} "
                    f"ede_text={b(r.ede_text)} cookie_client={b(r.cookie_client)} "
                    f"cookie_server={b(r.cookie_server)} ecs_family={r.ecs_family} "
                    f"ecs_source={r.ecs_source_prefix} ecs_scope={r.ecs_scope_prefix} "
                    f"ecs_address={b(r.ecs_address)}")
        if member == "on_a":
            return self._rr("a", r.rr) + " address=" + ".".join(str(b) for b in r.address)
        if member == "on_aaaa":
            return self._rr("aaaa", r.rr) + " address=" + bytes(r.address).hex()
        if member in TARGETS:
            return self._rr(TARGETS[member], r.rr) + f" target={self._s(r.target)}"
        if member == "on_mx":
            return self._rr("mx", r.rr) + f" preference={r.preference} exchange={self._s(r.exchange)}"
        if member == "on_txt":
            strings = "".join(f" string={self._bytes(r.strings[i])}" for i in range(r.count))
            return self._rr("txt", r.rr) + f" count={r.count}{strings}"
        if member == "on_srv":
            return self._rr("srv", r.rr) + (f" priority={r.priority} weight={r.weight} "
                                            f"port={r.port} target={self._s(r.target)}")
        if member == "on_naptr":
            return self._rr("naptr", r.rr) + (
                f" order={r.order} preference={r.preference} flags={self._bytes(r.flags)} "
                f"services={self._bytes(r.services)} regexp={self._bytes(r.regexp)} "
                f"replacement={self._s(r.replacement)}")
        if member == "on_soa":
            return self._rr("soa", r.rr) + (
                f" mname={self._s(r.mname)} rname={self._s(r.rname)} serial={r.serial} "
                f"refresh={r.refresh} retry={r.retry} expire={r.expire} minimum={r.minimum}")
        assert member == "on_other"
        return self._rr("other", r.rr) + f" rdata={self._bytes(r.rdata)}"
