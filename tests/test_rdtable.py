"""The fixed (class, type) -> parser table of shim/rdtable.py.

It must name every RDATA module the installed dnspython has, give for every
pair what dnspython gives for that pair asked first in a fresh process,
never touch dnspython's registry, and match the manual's table (dnsshim(7),
RECORD TYPES: csrc/dnsshim.7.md).
"""

import json
import pkgutil
import re
import subprocess
import sys

import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.rdtypes.ANY
import dns.rdtypes.CH
import dns.rdtypes.IN
import pytest

import history
from conftest import ROOT
from shim import glue, rdtable


@pytest.mark.parametrize("package, names", [(dns.rdtypes.IN, rdtable.IN_MODULES),
                                            (dns.rdtypes.CH, rdtable.CH_MODULES),
                                            (dns.rdtypes.ANY, rdtable.ANY_MODULES)],
                         ids=["IN", "CH", "ANY"])
def test_the_table_names_every_module_dnspython_has(package, names):
    assert sorted(names) == sorted(m.name for m in pkgutil.iter_modules(package.__path__))


# Every kind of class, and every type dnspython knows plus unknown ones.
PAIRS = [(c, t) for c in history.CLASSES + (9, 2)
         for t in history.EVERY_TYPE + (41, 250, 0, 1000, 65280, 65535)]

_FRESH_LOOKUP = """
import json, sys
sys.path[:0] = [sys.argv[1], sys.argv[1] + "/tests"]
import dns.rdata
import fresh_reference as fresh
pairs = json.loads(sys.stdin.read())
def lookup(pair):
    cls = dns.rdata.get_rdata_class(*pair)
    return cls.__module__ + "." + cls.__name__
print(json.dumps(fresh.run(lookup, [tuple(p) for p in pairs])))
"""


def test_every_pair_gets_what_dnspython_gives_it_first_in_a_fresh_process():
    """dnspython's lookup is right the first time it is asked in a process
    (it is later ones that its registry spoils): each pair, asked first in
    its own fork of a process that has looked up nothing."""
    out = subprocess.run([sys.executable, "-c", _FRESH_LOOKUP, str(ROOT)], input=json.dumps(PAIRS),
                         capture_output=True, text=True, check=True, timeout=600)
    fresh_answer = json.loads(out.stdout)
    mine = [f"{rdtable.implementation(c, t).__module__}.{rdtable.implementation(c, t).__name__}"
            for c, t in PAIRS]
    assert [(p, m, f) for p, m, f in zip(PAIRS, mine, fresh_answer) if m != f] == []


def test_lookups_never_read_or_write_dnspythons_registry(monkeypatch):
    class Untouchable(dict):
        def __getitem__(self, key):
            raise AssertionError("read")

        get = __contains__ = __setitem__ = __getitem__

    monkeypatch.setattr(dns.rdata, "_rdata_classes", Untouchable())
    monkeypatch.setattr(rdtable, "_LOADED", {})
    monkeypatch.setattr(rdtable, "_PARSERS", {})
    for c, t in PAIRS:
        rdtable.parser(c, t)


def test_a_poisoned_registry_changes_nothing():
    """dnspython's registry in the state one class ANY SRV record leaves it
    (GenericRdata under (ANY, SRV)): dnspython then parses IN SRV as generic;
    the table still gives IN SRV."""
    import dns.rdtypes.IN.SRV
    assert rdtable.implementation(255, 33) is dns.rdata.GenericRdata
    assert rdtable.implementation(1, 33) is dns.rdtypes.IN.SRV.SRV
    assert rdtable.implementation(11264, 1) is dns.rdata.GenericRdata
    assert rdtable.implementation(3, 1).__module__ == "dns.rdtypes.CH.A"
    assert rdtable.implementation(4, 15).__module__ == "dns.rdtypes.ANY.MX"


def test_unknown_values_do_not_grow_the_table():
    before = len(rdtable._PARSERS), len(rdtable._LOADED)
    for value in range(300, 2300):
        rdtable.parser(value, value)
        rdtable.parser(1, value)
        rdtable.parser(value, 1)
    assert (len(rdtable._PARSERS), len(rdtable._LOADED)) <= (
        len(rdtable._KNOWN_CLASSES) * len(rdtable._KNOWN_TYPES),
        len(rdtable.IN_MODULES) + len(rdtable.CH_MODULES) + len(rdtable.ANY_MODULES))
    assert len(rdtable._PARSERS) <= before[0] + 1  # (1, 1) at most, a known pair


def _manual_table() -> dict:
    text = (ROOT / "csrc" / "dnsshim.7.md").read_text()
    section = text[text.index("<!-- rdtable"):]
    rows = {}
    for line in section.splitlines()[3:6]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0].split()[0]] = cells[1:]
    independent = re.search(r"The class-independent types \([^)]*\): (.*?)\. \(OPT", section,
                            re.S).group(1)
    return rows, {n.strip() for n in independent.replace("\n", " ").split(",")}


def _names(cell) -> set:
    listed = cell.split(";")[0].split("(")[0] if ";" in cell else cell.split("(")[0]
    return {n.strip() for n in listed.split(",")} - {"none", "every other type",
                                                     "every class-independent type"}


def test_manual_table_is_the_table():
    rows, independent = _manual_table()
    assert independent == {n.replace("_", "-") for n in rdtable.ANY_MODULES} - {"OPT"}
    typed = {dns.rdatatype.to_text(t) for t in glue.TYPED}
    assert _names(rows["IN"][0]) == typed
    assert _names(rows["IN"][1]) == {n.replace("_", "-") for n in rdtable.IN_MODULES} - typed
    assert "every class-independent type" in rows["IN"][1]
    assert _names(rows["CH"][0]) == set() and rows["CH"][1].startswith("A ")
    assert _names(rows["any"][0]) == set() and rows["any"][1] == "every class-independent type"
