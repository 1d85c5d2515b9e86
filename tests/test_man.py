"""The manual pages (dnsshim_build/man.py) of this checkout: a page per exported
function, dnsshim(7), dnsshim_ares(3) and the tools' pages from their live
--help, each rendered as lintian renders it (man --warnings, no warning
allowed), through groff -ww, and read by lexgrog; what they say is checked
against the header, the version scripts and the tools, read here without
dnsshim_build.man."""

import os
import re
import subprocess
from pathlib import Path

import pytest

import shim
import shim.config
from conftest import ROOT, require_program
from dnsshim_build import header, man, pipeline

HEADER = (ROOT / "csrc" / "dns_shim.h").read_text()
LIB_MAP = (ROOT / "csrc" / "lib" / "libdnsshim.map").read_text()
ARES_MAP = (ROOT / "csrc" / "ares" / "libdnsshim_ares.map").read_text()
# GROFF_NO_SGR: grotty's overstriking, as groff 1.22 (Debian 12) gives it,
# not the SGR escapes groff 1.23 (Debian 13) writes by default
MAN_ENV = {"LC_ALL": "C.UTF-8", "MANROFFSEQ": "", "MANWIDTH": "80", "GROFF_NO_SGR": "1"}
MANUALS = {"1": "User Commands", "3": "Library Functions Manual",
           "7": "Miscellaneous Information Manual", "8": "System Manager's Manual"}


def map_globals(text: str) -> dict:
    """{symbol: node} of a linker version script ("" for an anonymous node)."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    out = {}
    for node, body in re.findall(r"([\w.]*)\s*\{(.*?)\}", text, re.S):
        for symbol in re.findall(r"(\w+)\s*;", body.split("local:")[0]):
            out[symbol] = node
    return out


def header_prototypes() -> dict:
    """{function: prototype} of the DNS_SHIM_API declarations, in order."""
    out = {}
    for m in re.finditer(r"^DNS_SHIM_API\s+(.*?;)", HEADER, re.M | re.S):
        proto = " ".join(m.group(1).split())
        out[re.search(r"(\w+)\s*\(", proto).group(1)] = proto
    return out


FUNCTIONS = header_prototypes()
TOOLS = ["dnsshim-dump", "dnsshim-config"]
PAGES = ([f"{f}.3" for f in FUNCTIONS] + ["dnsshim.7", "dnsshim_ares.3", "libnss_dnsshim.8",
                                          "dnsshimd.8"]
         + [f"{t}.1" for t in TOOLS])


@pytest.fixture(scope="module")
def tools(built) -> dict:
    """The tools' --help texts: the built dnsshim-dump's (its argv[0] is the
    build directory's path) and dnsshim-config's argparse text at 80 columns."""
    dump = subprocess.run([str(built.dump_prog), "--help"], capture_output=True, text=True)
    assert dump.returncode == 0 and dump.stdout.startswith("usage: "), dump
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("COLUMNS", "80")
        config = shim.config.parser("dnsshim-config", epilog=shim.config.EPILOG).format_help()
    return {"dnsshim-dump": dump.stdout, "dnsshim-config": config}


@pytest.fixture(scope="module")
def pages(tmp_path_factory, tools) -> dict:
    """{page: its path}, as the installer writes them."""
    mandir = tmp_path_factory.mktemp("man")
    paths = man.write_pages(mandir, tools)
    assert paths == sorted(paths) == sorted(p for p in mandir.rglob("*") if p.is_file())
    for p in paths:
        assert p.parent == mandir / f"man{p.suffix[1:]}"
    return {p.name: p for p in paths}


def run_man(path, *options):
    require_program("man", "man-db")
    return subprocess.run(["man", "--warnings", "-E", "UTF-8", "-l", "-Tutf8", *options, str(path)],
                          capture_output=True, text=True, env={**os.environ, **MAN_ENV})


def rendered(path) -> str:
    r = run_man(path)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    # grotty's overstriking, and any SGR escape a grotty writes anyway
    return re.sub(r"\x1b\[[0-9;]*m", "", re.sub(".\b", "", r.stdout))


def section(text: str, title: str) -> str:
    m = re.search(rf"^{title}\n(.*?)(?=^\S|\Z)", text, re.M | re.S)
    assert m, title
    return m.group(1)


def flat(text: str) -> str:
    return " ".join(text.split())


def test_a_page_for_every_exported_function(pages):
    exported = map_globals(LIB_MAP)
    # The private entries (test_header names each) are no API: no page.
    private = {name for name, node in exported.items() if node == "DNSSHIM_PRIVATE"}
    assert private == {name for name in exported if pipeline.private_export(name)}
    assert private == set(pipeline.version_nodes()["DNSSHIM_PRIVATE"])
    assert set(FUNCTIONS) == set(exported) - {"PyInit__dnsshim_cffi"} - private
    assert {"dns_shim_set_allocator", "dns_shim_set_memory_limit"} <= set(FUNCTIONS)
    assert header.parse(HEADER).function_names() == list(FUNCTIONS)
    assert sorted(pages) == sorted(PAGES)


@pytest.mark.parametrize("page", PAGES)
def test_page_renders_without_a_warning(pages, page):
    for options in (["-Z"], []):                # lintian's command, and to text
        r = run_man(pages[page], *options)
        assert r.returncode == 0 and r.stderr == "", (options, r.stderr)
        assert r.stdout.strip()
    require_program("groff", "groff-base")
    r = subprocess.run(["groff", "-t", "-man", "-ww", "-z", str(pages[page])],
                       capture_output=True, text=True)
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    require_program("lexgrog", "man-db")
    r = subprocess.run(["lexgrog", str(pages[page])], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    name = page.rsplit(".", 1)[0]
    assert re.search(rf': "{re.escape(name)} - [a-zA-Z].{{8,}}"$', r.stdout, re.M), r.stdout


@pytest.mark.parametrize("function", FUNCTIONS)
def test_function_page_shows_its_prototype_and_symbol_version(pages, function):
    text = rendered(pages[f"{function}.3"])
    synopsis = flat(section(text, "SYNOPSIS"))
    assert "#include <dns_shim.h>" in synopsis
    assert flat(FUNCTIONS[function]) in synopsis.replace("( ", "(")
    node = map_globals(LIB_MAP)[function]
    versions = flat(section(text, "VERSIONS"))
    assert f"added in dnsshim {node.split('_')[1]}; its symbol version is {node}." in versions
    assert section(text, "RETURN VALUE").strip()


def test_versions_marker_contradicting_the_map_is_an_error():
    wrong = {f: "DNSSHIM_1.0" for f in FUNCTIONS}
    with pytest.raises(ValueError, match="dns_shim_process_reply"):
        man.pages(HEADER, shim.__version__, {}, symbol_versions=wrong)


def test_status_table_has_every_code_with_its_value(pages):
    body = re.search(r"typedef enum dns_shim_status\s*\{(.*?)\}", HEADER, re.S).group(1)
    codes = re.findall(r"(DNS_SHIM_\w+)\s*=\s*(-?\d+)", re.sub(r"/\*.*?\*/", "", body, flags=re.S))
    assert len(codes) == 18 and codes[0] == ("DNS_SHIM_OK", "0")
    source = pages["dnsshim.7"].read_text()
    assert source.startswith("'\\\" t\n")          # man runs tbl
    rows = re.findall(r"^(DNS_SHIM_\w+)\t(\S+)\tT\{$", source, re.M)
    assert rows == [(name, value.replace("-", "\\-")) for name, value in codes]
    text = rendered(pages["dnsshim.7"])
    for name, value in codes:
        assert re.search(rf"^\s+{name}\s+{value}\s+\S", text, re.M), name
    for heading in ("CONVENTIONS", "VERSIONING", "DATA TYPES", "ENVIRONMENT"):
        assert re.search(rf"^{heading}$", text, re.M), heading


def test_function_pointer_members(pages):
    """dns_shim_allocator's members are function pointers: the struct is shown
    whole, and a member's comment goes to that member, not to a parameter."""
    text = rendered(pages["dns_shim_set_allocator.3"])
    assert "void *(*malloc)(void *ctx, size_t size);" in text
    assert "void (*free)(void *ctx, void *ptr);" in text
    calloc = "    void *(*calloc)(void *ctx, size_t nelem, size_t elsize);"
    assert calloc in HEADER
    commented = HEADER.replace(calloc, calloc + "  /* NULL: malloc, then zeroed */")
    page = man.pages(commented, shim.__version__, {})["dns_shim_set_allocator.3"]
    assert ".TP\n\\fIcalloc\\fP\nNULL: malloc, then zeroed\n" in page


@pytest.mark.parametrize("tool", TOOLS)
def test_tool_page_lists_every_option(built, tools, pages, tool):
    text = rendered(pages[f"{tool}.1"])
    assert str(built.dir) not in text
    options = flat(section(text, "OPTIONS"))
    listed = [line.split("  ")[0] for line in tools[tool].splitlines()
              if re.match(r"\s+-", line) and "  " in line.strip()]
    for opt in {o for spec in listed for o in re.findall(r"--?[a-z][\w-]*", spec)}:
        assert re.search(rf"(?<![\w-]){opt}(?![\w-])", options), opt
    for opt in set(re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", tools[tool])):
        assert opt in text, opt
    assert len(listed) >= 10


def _c_prototypes(text: str) -> dict:
    """{function: prototype} of C declarations (comments, preprocessor lines
    and CARES_EXTERN dropped), each prototype written one way: whitespace
    collapsed, no space after '*' or '(' nor before ')'."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = "\n".join(l for l in text.splitlines() if not l.lstrip().startswith("#"))
    out = {}
    for decl in text.split(";"):
        decl = " ".join(decl.replace("CARES_EXTERN", " ").split())
        m = re.fullmatch(r"[\w\s*]*?\b(\w+)\s*\((.*)\)", decl)
        if m:
            canonical = re.sub(r"\s*\*\s*", " *", decl)
            canonical = re.sub(r"\(\s*", "(", re.sub(r"\s*\)", ")", canonical))
            out[m.group(1)] = re.sub(r"\* \*", "**", canonical) + ";"
    return out


def test_ares_page_shows_every_exports_prototype(pages):
    """dnsshim_ares(3)'s SYNOPSIS, as c-ares's own pages have it: a prototype
    for every symbol the export list names, in its order, each as c-ares's
    header declares it (ares.h, where libc-ares-dev is installed; for
    ares_dns_parse, newer than Debian 12's c-ares, the definition of the test
    driver that stands in for it)."""
    exports = map_globals(ARES_MAP)
    # the classic API, ares_dns_parse, and the library initialization (the
    # allocator); and dnsshimd's entry, which no page shows
    assert set(exports.values()) == {""} and len(exports) == 23
    assert [name for name in exports if pipeline.private_export(name)] == ["dnsshim_ares__serve"]
    exports = {name: node for name, node in exports.items() if not pipeline.private_export(name)}
    synopsis = flat(section(rendered(pages["dnsshim_ares.3"]), "SYNOPSIS"))
    assert synopsis.startswith("#include <ares.h> ")
    shown = _c_prototypes(synopsis.split(" ", 2)[2].split(" Link with")[0])
    assert list(shown) == list(exports)
    driver = (ROOT / "tests" / "c" / "ares_parse_refusing.c").read_text()
    stand_in = _c_prototypes(re.search(r"^ares_status_t ares_dns_parse\([^)]*\)", driver,
                                       re.M).group(0) + ";")
    assert shown["ares_dns_parse"] == stand_in["ares_dns_parse"]
    from conftest import require_cares
    require_cares()
    includedir = subprocess.run(["pkg-config", "--variable=includedir", "libcares"],
                                capture_output=True, text=True, check=True).stdout.strip()
    cares = _c_prototypes((Path(includedir) / "ares.h").read_text())
    for name, prototype in shown.items():
        if name != "ares_dns_parse" or name in cares:
            assert prototype == cares[name], name


def test_a_synopsis_that_is_not_the_export_list_is_refused():
    source = (ROOT / man.ARES_SOURCE).read_text()
    dropped = re.sub(r"^void ares_free_data\(void \*dataptr\);\n", "", source, flags=re.M)
    assert dropped != source
    with pytest.raises(ValueError, match="ares_free_data"):
        man.pages(HEADER, shim.__version__, {}, ares_map=ARES_MAP, ares_source=dropped)


def test_reproducible_ascii_and_undated(pages, tools):
    again = man.pages_from_tree(ROOT, tools=tools)
    assert {name: path.read_text() for name, path in pages.items()} == again
    for name, text in again.items():
        assert text.isascii(), name
        th = next(line for line in text.splitlines() if line.startswith(".TH "))
        assert th.endswith(f' "" "dnsshim {shim.__version__}" "{MANUALS[name[-1]]}"'), th
        assert not re.search(r"\b(19|20)\d\d-\d\d-\d\d\b", text), name
        assert "\n\n" not in text and not re.search(r"[ \t]$", text, re.M), name


def test_a_new_function_gets_a_clean_page(tmp_path):
    new = ("/*\n** dns_shim_frobnicate (1.3): frobnicate a \\\\ backslash.\n**\n"
           "** .leading dot.  'apostrophe, -1 and --option; see dns_shim_init().\n**\n"
           "**   code -x \\\\n\n**\n** Returns 0.\n*/\n"
           "DNS_SHIM_API int32_t dns_shim_frobnicate(const char *a,\n"
           "                                         int32_t b);\n\n")
    assert HEADER.count("DNS_SHIM_END_DECLS\n\n#endif") == 1
    text = HEADER.replace("DNS_SHIM_END_DECLS\n\n#endif", new + "DNS_SHIM_END_DECLS\n\n#endif")
    page = man.pages(text, "1.3.0", {})["dns_shim_frobnicate.3"]
    assert "\\&.leading dot" in page and "\\&'apostrophe" in page
    assert "\\-1 and \\-\\-option" in page and "\\e" in page
    assert ".SH RETURN VALUE\nReturns 0." in page and "DNSSHIM_1.3" in page
    path = tmp_path / "dns_shim_frobnicate.3"
    path.write_text(page)
    out = flat(rendered(path))
    assert "int32_t dns_shim_frobnicate(const char *a, int32_t b);" in out
    assert ".leading dot. 'apostrophe, -1 and --option" in out


# ---- what a C developer reads: examples, statuses, nothing of the repository ----

PARSE = ["DNS_SHIM_OK", "DNS_SHIM_ERR_NULL_BUFFER", "DNS_SHIM_ERR_BAD_LENGTH",
         "DNS_SHIM_ERR_SHORT_HEADER", "DNS_SHIM_ERR_TRUNCATED", "DNS_SHIM_ERR_TRAILING_DATA",
         "DNS_SHIM_ERR_BAD_NAME", "DNS_SHIM_ERR_BAD_RDATA", "DNS_SHIM_ERR_NOT_RESPONSE",
         "DNS_SHIM_ERR_BAD_EDNS", "DNS_SHIM_ERR_FORMAT", "DNS_SHIM_ERR_CALLBACK"]
RUNTIME = ["DNS_SHIM_ERR_NO_MEMORY", "DNS_SHIM_ERR_INIT", "DNS_SHIM_ERR_INTERNAL"]
ARGUMENT = ["DNS_SHIM_ERR_BAD_ARGUMENT"]
# every status each function can return, as its comment and the status table say
STATUSES = {
    "process_dns_response": PARSE + RUNTIME,
    "dns_shim_process": PARSE + ARGUMENT + RUNTIME,
    "dns_shim_process_reply": PARSE + ARGUMENT + RUNTIME + ["DNS_SHIM_ERR_MISMATCH"],
    "dns_shim_register_callbacks": ["DNS_SHIM_OK"] + ARGUMENT,
    "dns_shim_init": ["DNS_SHIM_OK", "DNS_SHIM_ERR_INIT", "DNS_SHIM_ERR_NO_MEMORY"],
    "dns_shim_set_allocator": ["DNS_SHIM_OK"] + ARGUMENT,
    "dns_shim_set_memory_limit": ["DNS_SHIM_OK"] + ARGUMENT,
}
STATUS_VALUES = {name: int(value) for name, value in
                 re.findall(r"^\s*(DNS_SHIM_(?:OK|ERR_\w+)) = (-?\d+)", HEADER, re.M)}
REPOSITORY = re.compile(r"\b(?:README\.md|build_ffi\.py|csrc/|tests/|dnsshim_build|debian/)")


def test_no_page_refers_to_a_file_of_the_repository(pages):
    """Every page, as installed, names no file that only the source tree has."""
    for name, path in pages.items():
        found = REPOSITORY.findall(flat(rendered(path)))
        assert found == [], (name, found)


def test_return_value_lists_every_status_with_its_value(pages):
    for function, statuses in STATUSES.items():
        text = section(rendered(pages[f"{function}.3"]), "RETURN VALUE")
        listed = re.findall(r"^ {7}(DNS_SHIM_\w+) \((-?\d+)\)$", text, re.M)
        assert listed == [(s, str(STATUS_VALUES[s])) for s in statuses], function


def test_description_does_not_repeat_the_name_line(pages):
    for function in FUNCTIONS:
        text = rendered(pages[f"{function}.3"])
        summary = flat(section(text, "NAME")).split(" - ", 1)[1]
        assert summary not in flat(section(text, "DESCRIPTION")), function


def _shown_example(text):
    """The program an EXAMPLES section shows: from its first #include."""
    body = section(text, "EXAMPLES")
    lines = body.split("\n")
    start = next(n for n, line in enumerate(lines) if line.strip().startswith("#include"))
    indent = len(lines[start]) - len(lines[start].lstrip())
    return "\n".join(line[indent:] for line in lines[start:]) + "\n"


@pytest.mark.parametrize("page", [f"{f}.3" for f in FUNCTIONS] + ["dnsshim_ares.3"])
def test_examples_section_compiles_as_shown(pages, page, tmp_path):
    """What the page's EXAMPLES shows is a whole program, the example file's
    body, that compiles against the header without a warning; SEE ALSO names
    every function of the library it calls."""
    text = rendered(pages[page])
    program = _shown_example(text)
    name = re.search(r"The program (\w+\.c),", flat(section(text, "EXAMPLES"))).group(1)
    source = (ROOT / "examples" / name).read_text()
    # the file's body from its first #include (the page may break a long line)
    assert flat(program) == flat(source[source.index("#include"):])
    if page == "dnsshim_ares.3":
        from conftest import require_cares
        require_cares()
    (tmp_path / name).write_text(program)
    result = subprocess.run(["cc", "-c", "-Wall", "-Wextra", "-Werror", f"-I{ROOT / 'csrc'}",
                             str(tmp_path / name), "-o", str(tmp_path / "x.o")],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    see_also = flat(section(text, "SEE ALSO"))
    for function in FUNCTIONS:
        if function != page[:-2] and re.search(rf"\b{function}\(", program):
            assert f"{function}(3)" in see_also, (page, function)


def test_ares_page_names_ares_dns_parse_and_its_return_value(pages):
    text = rendered(pages["dnsshim_ares.3"])
    first = flat(section(text, "DESCRIPTION")).split(" The program's source", 1)[0]
    assert "ares_dns_parse for c-ares 1.28 and later" in first
    returns = flat(section(text, "RETURN VALUE"))
    for code in ("ARES_SUCCESS (0)", "ARES_EBADRESP", "ARES_ENODATA", "ARES_ENOMEM",
                 "ARES_ENOTINITIALIZED", "ARES_EBADNAME", "ARES_ENOTIMP", "ARES_EFORMERR"):
        assert code in returns


def test_ares_page_counts_what_c_ares_suite_says():
    """The page's count of c-ares's own tests, and of those that fail with
    ares_dns_parse preloaded, are test_arestest.py's."""
    import test_arestest

    text = flat((ROOT / man.ARES_SOURCE).read_text())
    words = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven",
             8: "eight", 9: "nine"}
    assert f"({test_arestest.EXPECTED_TESTS:,} tests:" in text
    assert f"but for {words[len(test_arestest.FAILS_WITH_DNSSHIM)]} tests," in text


# ---- what the pages say of themselves and of the C code ---------------------------

def _c_sources() -> str:
    return "\n".join(p.read_text() for p in sorted((ROOT / "csrc").rglob("*"))
                     if p.suffix in (".c", ".h"))


def read_variables() -> set:
    """The DNS_SHIM_* environment variables the C code reads: the names given
    to getenv or secure_getenv, or to a function or macro of the C code that
    passes its parameter on to one of them (dns_shim__getenv), found to a
    fixed point; a name given as a macro of a string is that string."""
    code = re.sub(r"/\*.*?\*/", " ", _c_sources(), flags=re.S)
    strings = dict(re.findall(r'#define\s+(\w+)\s+"(DNS_SHIM_\w+)"', code))
    readers = {"getenv", "secure_getenv"}
    while True:
        calls = "|".join(sorted(readers))
        functions = re.findall(rf"\b(\w+)\s*\(\s*const\s+char\s*\*\s*(\w+)\s*\)\s*\{{"
                               rf"[^{{}}]*?\b(?:{calls})\s*\(\s*\2\s*\)", code)
        macros = re.findall(rf"#define\s+(\w+)\((\w+)\)[^\n]*\b(?:{calls})\s*\(\s*\(?\2\)?\s*\)",
                            code)
        new = {name for name, _ in functions + macros} - readers
        if not new:
            break
        readers |= new
    calls = "|".join(sorted(readers))
    names = set(re.findall(rf'\b(?:{calls})\s*\(\s*"(DNS_SHIM_\w+)"', code))
    names |= {strings[m] for m in re.findall(rf"\b(?:{calls})\s*\(\s*(\w+)\s*\)", code)
              if m in strings}
    return names


def header_identifiers() -> set:
    """Every DNS_SHIM_* identifier the header's code declares (enumerators,
    macros): what a page may name besides the environment's variables."""
    code = re.sub(r"/\*.*?\*/", " ", HEADER, flags=re.S)
    return set(re.findall(r"\b(DNS_SHIM_\w+)\b", code))


def test_read_variables_finds_them_through_the_librarys_reader():
    """read_variables() finds what is known: the two variables the library
    reads through its one reader, dns_shim__getenv (secure_getenv, for
    secure-execution mode), never with getenv's name at the call."""
    assert {"DNS_SHIM_PYTHON", "DNS_SHIM_PARALLELISM"} <= read_variables()
    assert not re.search(r'\bgetenv\s*\(\s*"DNS_SHIM_', _c_sources())


def test_environment_lists_every_variable_the_library_reads(pages):
    """dnsshim(7)'s ENVIRONMENT names every DNS_SHIM_* variable the C code
    reads, each as an entry of its own, and no other; no page names a
    DNS_SHIM_* word that is neither a variable read nor an identifier of the
    header."""
    variables = read_variables()
    text = rendered(pages["dnsshim.7"])
    environment = section(text, "ENVIRONMENT")
    entries = set(re.findall(r"^ {7}(DNS_SHIM_\w+)$", environment, re.M))
    assert entries == variables
    named = set(re.findall(r"\b(DNS_SHIM_[A-Z0-9_]*[A-Z0-9])\b", environment))
    assert named - header_identifiers() == variables
    known = header_identifiers() | variables
    for name, path in pages.items():
        words = set(re.findall(r"\b(DNS_SHIM_[A-Z0-9_]*[A-Z0-9])\b", flat(rendered(path))))
        assert words <= known, (name, words - known)


def _headings(text: str) -> list:
    """(position, title) of a rendered page's sections and subsections."""
    return [(m.start(), m.group(1).strip()) for m in
            re.finditer(r"^(?: {3})?(\S.*)$", text, re.M) if not m.group(1).startswith(" ")]


#: "see X above" / "see X below": X a heading of the page, in that direction.
SEE = re.compile(r"\b[Ss]ee\s+(\"[^\"]+\"|[A-Za-z][\w().'-]*(?:\s+[A-Za-z][\w().'-]*){0,3})"
                 r"\s+(above|below)\b")


def test_no_page_refers_to_a_section_it_does_not_have(pages):
    """Every "see X above" or "see X below" of every page names a section or
    subsection of that page, above or below the reference as it says."""
    checked = 0
    for name, path in pages.items():
        text = rendered(path)
        headings = [(pos, title.lower()) for pos, title in _headings(text)]
        for m in SEE.finditer(text):
            target = " ".join(m.group(1).strip('"').split()).lower()
            where = [pos for pos, title in headings if title == target]
            assert where, (name, m.group(0))
            if m.group(2) == "above":
                assert min(where) < m.start(), (name, m.group(0))
            else:
                assert max(where) > m.start(), (name, m.group(0))
            checked += 1
    assert checked >= 5


def test_bad_argument_is_what_each_function_refuses(pages):
    """DNS_SHIM_ERR_BAD_ARGUMENT, which every function that takes a struct
    or a setting returns for causes of its own: each page's RETURN VALUE
    gives its function's causes only (dns_shim_process_reply's are api.c's
    checks of its arguments: its callbacks may be NULL, and it takes no
    allocator, limit or parallelism)."""
    # the words of each cause, and the only function it belongs to
    owners = {"allocator": "dns_shim_set_allocator", "limit": "dns_shim_set_memory_limit",
              "parallelism": "dns_shim_set_parallelism", "query": "dns_shim_process_reply",
              "qname": "dns_shim_process_reply"}
    returning = [f for f, statuses in STATUSES.items() if "DNS_SHIM_ERR_BAD_ARGUMENT" in statuses]
    returning.append("dns_shim_set_parallelism")
    for function in returning:
        text = section(rendered(pages[f"{function}.3"]), "RETURN VALUE")
        entry = flat(re.search(r"^ {7}DNS_SHIM_ERR_BAD_ARGUMENT \(-12\)\n(.*?)(?=^ {7}\S|\Z)",
                               text, re.M | re.S).group(1))
        for word, owner in owners.items():
            if owner != function:
                assert not re.search(rf"\b{word}\b", entry, re.I), (function, word, entry)
        others = [f for f in FUNCTIONS if f != function and re.search(rf"\b{f}\b", entry)]
        assert others == [], (function, others)
    reply = flat(section(rendered(pages["dns_shim_process_reply.3"]), "RETURN VALUE"))
    assert "The callbacks set is NULL" not in reply and "callbacks set is not NULL" in reply
    assert "the query is null" in reply.lower()


def test_threads_are_no_longer_said_not_to_parse_faster(pages):
    """Since parallelism, more threads can parse at once: the conventions'
    Threads says how, and no page says they cannot."""
    for name, path in pages.items():
        assert "do not parse faster" not in flat(rendered(path)), name
    text = rendered(pages["dnsshim.7"])
    threads = flat(re.search(r"^ {3}Threads\n(.*?)(?=^ {3}\S)", text, re.M | re.S).group(1))
    assert "dns_shim_set_parallelism(n)" in threads and "at once" in threads


def test_dnsshim_config_page_has_examples_of_its_own_options(pages, tools):
    """dnsshim-config(1) has EXAMPLES, as curl-config(1) has: every option
    they use is one the tool has, and libdnsshim_ares is preloaded by the
    path --libdir prints, which works for every installation."""
    text = rendered(pages["dnsshim-config.1"])
    examples = section(text, "EXAMPLES")
    used = set(re.findall(r"dnsshim-config((?: --[a-z-]+)+)", examples))
    options = set(re.findall(r"(?<![\w-])(--[a-z][\w-]*)", tools["dnsshim-config"]))
    assert used and {o for u in used for o in u.split()} <= options
    assert "LD_PRELOAD=$(dnsshim-config --libdir)/libdnsshim_ares.so.1" in examples
    assert "find_package(dnsshim" in examples and "pkg-config --cflags --libs dnsshim" in examples
    version = re.search(r"shim (\d+\.\d+\.\d+) \(", examples).group(1)
    assert version == shim.__version__


def test_table_text_blocks_are_set_ragged_right():
    """Every text block of a table (T{ ... T}) starts with .ad l: groff 1.23
    (Debian 13) warns "cannot adjust line" where a narrow column of long
    identifiers is justified, which groff 1.22 (Debian 12) lets pass."""
    pages = man.pages_from_tree(ROOT)
    blocks = [(name, text.split("T{\n", 1)[1].split("\n", 1)[0])
              for name, roff in pages.items() for text in roff.split("\nT}")
              if "T{\n" in text]
    assert blocks, "no table text block in any page"
    assert [(name, first) for name, first in blocks if first != ".ad l"] == []


def test_the_nss_module_s_page_names_every_function_it_exports(pages):
    """libnss_dnsshim(8) names each function of the module's export list, and
    no other _nss_ function; and the variable it reads."""
    exported = set(map_globals((ROOT / "csrc" / "nss" / "libnss_dnsshim.map").read_text()))
    text = flat(rendered(pages["libnss_dnsshim.8"]))
    assert set(re.findall(r"\b(_nss_\w+)", text)) == exported
    assert len(exported) == 6
    assert "DNS_SHIM_NSS_LOG" in section(rendered(pages["libnss_dnsshim.8"]), "ENVIRONMENT")
