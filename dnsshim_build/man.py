"""The manual pages, generated from their single sources.

:func:`write_pages` writes them into a ``share/man`` directory, as the
installer does; :func:`pages_from_tree` returns them as ``{filename: roff}``
from a source tree; :func:`pages` from the texts themselves.

* Section 3: one page per function that ``csrc/dns_shim.h`` declares with
  ``DNS_SHIM_API`` (NAME, SYNOPSIS, DESCRIPTION with the types of its
  parameters, RETURN VALUE, VERSIONS, EXAMPLES, SEE ALSO), from the comment
  right above the declaration, so a function added to the header gets its
  page; the comment's ``@returns`` lines list the statuses it can return
  (RETURN VALUE gives each with its value and the status table's meaning, or
  the function's own cause: ``@returns STATUS: cause``), its
  ``@example FILE`` lines the program of ``examples/`` its EXAMPLES shows;
  ``dnsshim_ares.3`` for the c-ares layer, from its Markdown source
  (``csrc/ares/dnsshim_ares.3.md``: a SYNOPSIS of c-ares's prototypes,
  which must declare exactly what the export list
  ``csrc/ares/libdnsshim_ares.map`` exports, in its order, then its other
  sections), with examples/ares_classic.c.
* Section 7: ``dnsshim.7``: the header's conventions (its top comment; its
  "Environment." paragraph and the list of variables after it make
  ENVIRONMENT), a table of the status codes (``enum dns_shim_status``), the
  log levels, the versioning rules (its bottom comment), every other data
  type, then the sections of ``csrc/dnsshim.7.md`` (record types,
  installations, diagnostics).
* Section 1: one page per tool, from its ``--help`` text (argparse's or a
  hand-written usage text), with the sections of
  ``csrc/tools/NAME.1.md`` where there is one (dnsshim-config's
  EXAMPLES).
* Section 8: ``libnss_dnsshim.8`` (``csrc/nss/libnss_dnsshim.8.md``) and
  ``dnsshimd.8``, the parse service's (``csrc/service/dnsshimd.8.md``):
  NAME, the sections of the Markdown source, SEE ALSO.

Each function's symbol version comes from ``csrc/lib/libdnsshim.map``; a
"(1.1)" marker in its comment that disagrees with the map is an error.

Every page is ASCII, has no date (``.TH``'s date field is empty: builds are
reproducible), no blank line and no trailing whitespace, and renders without
a warning from ``man --warnings`` or ``groff -ww``.  The header is read by
:mod:`dnsshim_build.header` and the version scripts by dnsshim_build.pipeline,
the build's own readers; otherwise standard library only.  :mod:`dnsshim_build.man_roff` writes the
roff, :mod:`dnsshim_build.man_markdown` converts the Markdown sources.

``python -m dnsshim_build.man --out DIR [--tool NAME=HELPFILE]`` writes the pages of
this source tree into ``DIR/manN/``, to look at them.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["write_pages", "pages", "pages_from_tree"]

from dnsshim_build import header as header_reader
from dnsshim_build import pipeline
from dnsshim_build.header import Declaration, Header, join_lines, release_marker
from dnsshim_build.man_markdown import markdown_sections, markdown_sections_roff, markdown_to_roff
from dnsshim_build.man_roff import (Inline, code_block, esc, finish, line_safe, quote_arg, sentence_lines,
                           split_top, title_lines, wrap_decl)

INCLUDE = "dns_shim.h"

#: A function comment's tags, one a line, after its prose:
#: ``@example FILE`` (FILE of examples/, shown in EXAMPLES) and
#: ``@returns STATUS...`` (the statuses it can return, listed in RETURN VALUE
#: with the meaning the status table gives each), or ``@returns STATUS: what
#: makes this function return it`` (continued on the lines indented below
#: it), which the page gives instead of the status table's meaning: a status
#: several functions return for causes of their own (DNS_SHIM_ERR_BAD_ARGUMENT)
#: says on each function's page only what that function refuses.
TAG = re.compile(r"^@(example|returns)\s+(.*)$")
CAUSE = re.compile(r"^(DNS_SHIM_\w+):\s*(.*)$")

#: Where the installations put examples/ (shim/layout.py's "examples" part).
EXAMPLES_DIR = "share/doc/dnsshim/examples"
#: Where the Debian package puts them (debian/libdnsshim-dev.examples).
DEBIAN_EXAMPLES_DIR = "/usr/share/doc/libdnsshim-dev/examples"


def split_tags(comment: list, causes: dict | None = None) -> tuple:
    """(the comment without its tag lines, [example file...], [status...]);
    causes, when given, gets {status: the function's own cause} of its
    ``@returns STATUS: cause`` tags."""
    text, examples, statuses = [], [], []
    cause = None                  # the lines of the cause being read
    for line in comment:
        if cause is not None and line.startswith((" ", "\t")) and line.strip():
            cause.append(line.strip())
            continue
        cause = None
        m = TAG.match(line.strip())
        if m is None:
            text.append(line)
        elif m.group(1) == "example":
            examples += m.group(2).split()
        elif CAUSE.match(m.group(2)):
            name, first = CAUSE.match(m.group(2)).groups()
            statuses.append(name)
            cause = [first]
            if causes is not None:
                causes[name] = cause
        else:
            statuses += m.group(2).replace(",", " ").split()
    while text and not text[-1].strip():
        text.pop()
    if causes is not None:
        for name, lines in causes.items():
            causes[name] = join_lines(lines)
    return text, examples, statuses


def example_body(source: str) -> list:
    """The lines of an example program a page shows: from its first #include
    (its opening comment, which says how to run it, is the page's prose)."""
    lines = source.rstrip("\n").split("\n")
    first = next(n for n, l in enumerate(lines) if l.startswith("#include"))
    return lines[first:]


def examples_section(files: list, examples: dict, inline: Inline, library: str) -> list:
    """EXAMPLES: each file, whole from its first #include, with how to build it."""
    out = [".SH EXAMPLES"]
    for name in files:
        if name not in examples:
            raise ValueError(f"@example {name}: no such file in examples/")
        build = (f"cc {name} $(pkg-config --libs {library}) -lcares" if library == "dnsshim-ares"
                 else f"cc {name} $(pkg-config --cflags --libs {library})")
        out += [".PP", f"The program \\fI{esc(name, code=True)}\\fP, installed with the",
                f"documentation (\\fI{esc(EXAMPLES_DIR, code=True)}/\\fP under the installation's",
                "prefix; from the Debian package,",
                f"\\fI{esc(DEBIAN_EXAMPLES_DIR, code=True)}/\\fP),",
                "with its Makefile and CMakeLists.txt.",
                "Build it with:"]
        out += code_block([build])
        out += code_block(example_body(examples[name]), wrap=False)
    return out


def statuses_section(statuses: list, enum: Declaration, values: dict, inline: Inline,
                     causes: dict | None = None) -> list:
    """Each status a function can return, its value and what produces it:
    the function's own cause (causes, from ``@returns STATUS: cause``), else
    the comment of its enumerator in the header's status table."""
    members = {m.name: m for m in enum.members}
    out = [".PP", "It returns one of these statuses (the values of",
           ".BR dns_shim_status ),", "and no other value:"]
    for name in statuses:
        if name not in members:
            raise ValueError(f"@returns {name}: not a status of enum dns_shim_status")
        text = (causes or {}).get(name) or members[name].comment
        out += [".TP", f"\\fB{esc(name, code=True)}\\fP ({esc(str(values[name]), code=True)})"]
        out += [line_safe(inline(s)) for s in sentence_lines(text[:1].upper() + text[1:])]
    return out


# ---------------------------------------------------------------------------
# Comments' text as blocks


def _dedent(lines: list) -> list:
    indents = [len(l) - len(l.lstrip()) for l in lines if l.strip()]
    cut = min(indents, default=0)
    return [l[cut:] for l in lines]


def blocks(lines: list) -> list:
    """Blank-line separated blocks of comment lines."""
    out, cur = [], []
    for line in lines:
        if line.strip():
            cur.append(line)
        elif cur:
            out.append(cur)
            cur = []
    if cur:
        out.append(cur)
    return out


def _dedent_sections(lines: list) -> list:
    """A file comment's lines with each heading's body (indented below an
    upper-case heading) dedented."""
    out, body = [], []

    def flush():
        out.extend(_dedent(body))
        body.clear()

    for line in lines:
        if re.fullmatch(r"[A-Z][A-Z ]+", line.strip()) and not line.startswith(" "):
            flush()
            out.append(line)
        else:
            body.append(line)
    flush()
    return out


ITEM = re.compile(r"^(`?\w+`?(?:, `?\w+`?)*):\s+(.*)$")


@dataclass
class Block:
    kind: str                  # "para", "code", "items", "heading", "section"
    text: str = ""
    lines: list = field(default_factory=list)
    items: list = field(default_factory=list)     # [(names, text)]
    title: str = ""


def classify(lines: list, sections: bool = False) -> list:
    """A comment's lines as Blocks: prose paragraphs, literal blocks
    (indented), definition lists ("name: text" with indented continuation
    lines), upper-case headings and "Title.  text" subsections."""
    out = []
    for block in blocks(lines):
        first = block[0]
        if first.startswith(" "):
            out.append(Block("code", lines=_dedent(block)))
            continue
        if len(block) == 1 and re.fullmatch(r"[A-Z][A-Z ]+", first.strip()):
            out.append(Block("heading", title=first.strip()))
            continue
        starts = [l for l in block if not l.startswith(" ")]
        if all(ITEM.match(l) for l in starts):
            items = []
            for line in block:
                m = ITEM.match(line) if not line.startswith(" ") else None
                if m:
                    items.append([m.group(1).replace("`", ""), [m.group(2)]])
                else:
                    items[-1][1].append(line)
            out.append(Block("items", items=[(n, join_lines(t)) for n, t in items]))
            continue
        text = join_lines(block)
        m = re.match(r"^([A-Za-z][\w ()'-]{0,40}?)\.  (?=\S)", text) if sections else None
        if m and not ITEM.match(first):
            out.append(Block("section", title=m.group(1), text=text[m.end():]))
            continue
        out.append(Block("para", text=text))
    return out


def render_blocks(bs: list, inline: Inline, params=(), item_font: str | None = None) -> list:
    """roff lines for Blocks (headings and sections not handled here); a
    definition list's names in item_font, else italic for parameters (or
    when params is empty), bold for anything else."""
    out = []
    for b in bs:
        if b.kind in ("para", "section"):
            out.append(".PP")
            out += [line_safe(inline(s)) for s in sentence_lines(b.text)]
        elif b.kind == "code":
            out += code_block(b.lines)
        elif b.kind == "items":
            for names, text in b.items:
                out.append(".TP")
                font = item_font or ("I" if (not params or all(n in params for n in names.split(", ")))
                                     else "B")
                out.append(", ".join(f"\\f{font}{esc(n)}\\fP" for n in names.split(", ")))
                out += [line_safe(inline(s)) for s in sentence_lines(text)]
    return out


# ---------------------------------------------------------------------------
# Pages


def short_summary(text: str, limit: int = 60) -> str:
    """A NAME line's description: the text, cut when it is longer than limit
    at the first colon, semicolon or parenthesis within the limit, else at
    the first comma or any of those."""
    text = re.sub(r"`|\*\*", "", text).strip().rstrip(".")
    if len(text) > limit:
        strong = [15 + m.start() for m in re.finditer(r"[:;]\s| \(", text[15:])]
        weak = [15 + m.start() for m in re.finditer(r"[:;,]\s| \(", text[15:])]
        cut = min([c for c in strong if c <= limit] or weak or [len(text)])
        text = text[:cut]
    return text


def _name_section(names: list, summary: str) -> list:
    summary = short_summary(summary)
    return [".SH NAME", f"{', '.join(esc(n, code=True) for n in names)} \\- {esc(summary)}"]


def _see_also(refs: list) -> list:
    refs = sorted(dict.fromkeys(refs), key=lambda r: (r[1], r[0]))
    if not refs:
        return []
    items = [f".BR {esc(name, code=True)} ({sec})" for name, sec in refs]
    return [".SH SEE ALSO"] + [i + ("," if n < len(items) - 1 else "")
                              for n, i in enumerate(items)]


def _synopsis_prototype(prototype: str) -> list:
    """The prototype in the SYNOPSIS: types and the name bold, parameter
    names italic, broken after commas when longer than a line."""
    out = []
    for piece in wrap_decl(prototype):
        roff = esc(piece, code=True)
        # parameter names: the identifier before ',' or ')' (not "void")
        roff = re.sub(r"(?<=[\s*])(\w+)(?=(,|\);?$))",
                      lambda m: m.group(0) if m.group(1) == "void" else f"\\fI{m.group(1)}\\fB",
                      roff)
        out.append(f"\\fB{roff}\\fP")
    return out


def _params(prototype: str) -> list:
    inner = prototype[prototype.index("(") + 1:prototype.rindex(")")]
    names = []
    for p in split_top(inner):
        m = (re.search(r"\(\s*\*\s*(\w+)\s*\)\s*\(", p)
             or re.search(r"(\w+)\s*(?:\[[^\]]*\])?\s*$", p.strip()))
        if m and m.group(1) != "void":
            names.append(m.group(1))
    return names


def _type_section(chunk: Declaration, inline: Inline, title: str) -> list:
    """A data type: its comment, its declaration, its members' comments."""
    out = [f".SS {quote_arg(title)}"]
    out += render_blocks(classify(chunk.comment), inline)
    decl = chunk.code_lines()
    if decl:
        out += code_block(decl)
    commented = [m for m in chunk.members if m.comment or m.heading]
    if commented:
        out.append(".PP")
        skip = set()
        for m in chunk.members:
            if m.heading:
                out += [".PP", line_safe(inline(m.heading))]
            if m.comment and m.name not in skip:
                names = [m.name] + ([m.shared_with] if m.shared_with else [])
                skip.update(names)
                out += [".TP", ", ".join(f"\\fI{esc(n, code=True)}\\fP" for n in names)]
                text = m.comment
                if re.fullmatch(r"\d+\.\d+", text):
                    text = f"Added in {text}."
                out += [line_safe(inline(s)) for s in sentence_lines(text)]
    return out


def function_page(header: Header, chunk: Declaration, version: str, node: str,
                  functions: list, extra_see_also=(), examples: dict | None = None,
                  statuses: dict | None = None) -> str:
    name = chunk.names[0]
    inline = Inline(functions)
    causes = {}
    comment, example_files, returns = split_tags(chunk.comment, causes)
    all_blocks = blocks(comment)
    first = join_lines(all_blocks[0]) if all_blocks else ""
    bs = classify([l for b in all_blocks[1:] for l in b + [""]])
    m = re.match(rf"^{re.escape(name)}\s*(?:\((\d+\.\d+)\))?\s*:\s*(.*)$", first, re.S)
    summary_rest = ""
    if m:
        sentences = sentence_lines(m.group(2))
        summary = sentences[0]
        summary_rest = "  ".join(sentences[1:])
    else:
        summary = name
        bs = classify(comment)
    params = _params(chunk.prototype)

    desc, ret = [], []
    # NAME says the summary; DESCRIPTION goes on from there
    lead = [Block("para", text=summary_rest)] if summary_rest else []
    for b in lead + bs:
        if b.kind != "para":
            desc.append(b)
            continue
        if b.text.startswith("Returns"):
            ret.append(b)
            continue
        keep, moved = [], []
        for s in sentence_lines(b.text):
            (moved if s.startswith("Returns ") else keep).append(s)
        if keep:
            desc.append(Block("para", text="  ".join(keep)))
        if moved:
            ret.append(Block("para", text="  ".join(moved)))

    out = title_lines(name, "3", version) + _name_section([name], summary)
    out += [".SH SYNOPSIS", ".nf", f".B #include <{INCLUDE}>", ".PP"]
    out += _synopsis_prototype(chunk.prototype)
    out += [".fi", ".PP", "Link with", ".IR \\-ldnsshim ."]
    out += [".SH DESCRIPTION"] + render_blocks(desc, inline, params)

    # the types of its parameters, from the header
    # (and the enums their comments name: the log levels of a log handler)
    seen, queue = set(), re.findall(r"\b(dns_shim_\w+)\b", chunk.prototype)
    while queue:
        typ = queue.pop(0)
        t = header.declaration(typ)
        if t is None or typ in seen or t.kind not in ("struct", "typedef", "enum"):
            continue
        seen.add(typ)
        out += _type_section(t, inline, f"The {typ} type")
        queue += [n for n in re.findall(r"\b(dns_shim_\w+)\b", "\n".join(t.comment))
                  if getattr(header.declaration(n), "kind", "") == "enum"]

    out.append(".SH RETURN VALUE")
    if ret:
        out += render_blocks(ret, inline, params)
    elif chunk.prototype.startswith("void "):
        out += [f"\\fB{esc(name)}\\fP() returns no value."]
    elif not returns:
        out += ["See", ".BR DESCRIPTION ."]
    if returns:
        out += statuses_section(returns, header.declaration("dns_shim_status"), statuses or {},
                                inline, causes)

    out.append(".SH VERSIONS")
    release = node.rsplit("_", 1)[-1]
    out += [f"\\fB{esc(name)}\\fP() was added in dnsshim {esc(release)};",
            f"its symbol version is \\fB{esc(node, code=True)}\\fP.",
            "See", ".BR dnsshim (7),", "section", ".BR VERSIONING ."]

    if example_files and examples is not None:  # examples: None when not given
        out += examples_section(example_files, examples, inline, "dnsshim")

    # SEE ALSO: the functions its comment or its examples use
    shown = "\n".join(comment + [examples[f] for f in example_files if f in (examples or {})])
    mentioned = [f for f in functions if f != name and re.search(rf"\b{f}\b", shown)]
    out += _see_also([(f, "3") for f in mentioned] + [("dnsshim", "7")] + list(extra_see_also))
    return finish(out)


def _status_table(enum: Declaration, values: dict) -> list:
    """The status codes' table: each enumerator's documentation and its
    value (``values``: Header.enum, as the build reads them).  Each meaning
    is set ragged right (.ad l): a narrow column of long identifiers cannot
    be justified, and groff 1.23 (Debian 13) warns "cannot adjust line"."""
    out = [".TS", "tab(\t);", "lB r lx.", "\\fIcode\\fP\t\\fIvalue\\fP\t\\fImeaning\\fP", "_"]
    for m in enum.members:
        value = str(values[m.name])
        text = "\n".join(line_safe(Inline()(s)) for s in sentence_lines(m.comment))
        out.append(f"{esc(m.name, code=True)}\t{esc(value, code=True)}\tT{{\n.ad l\n{text}\nT}}")
    out.append(".TE")
    return out


def _member_list(enum: Declaration, inline: Inline) -> list:
    out = []
    for m in enum.members:
        value = m.decl.split("=", 1)[1].strip() if "=" in m.decl else ""
        out += [".TP", f"\\fB{esc(m.name, code=True)}\\fP" + (f" ({esc(value, code=True)})" if value else "")]
        out += [line_safe(inline(s)) for s in sentence_lines(m.comment)] or ["\\&"]
    return out


def overview_page(header: Header, version: str, functions: list, summaries: dict,
                  extra_see_also=(), statuses: dict | None = None,
                  supplement: str | None = None) -> str:
    """dnsshim.7; ``statuses``: the values of the header's enum
    dns_shim_status (Header.enum); ``supplement``: Markdown whose ``## ``
    sections follow ENVIRONMENT (csrc/dnsshim.7.md)."""
    inline = Inline(functions)
    out = title_lines("dnsshim", "7", version)

    top = classify(_dedent_sections(header.top), sections=True)
    # the header's own first line ("dns_shim.h: the public interface ...")
    intro, rest = [], top
    for n, b in enumerate(top):
        if b.kind == "heading":
            intro, rest = top[:n], top[n:]
            break
    lead = next((b.text for b in intro if b.kind == "para" and not b.text.startswith(INCLUDE)), "")
    summary = sentence_lines(lead)[0] if lead else "DNS response parsing"
    summary = re.sub(r"^libdnsshim\s+", "", summary)
    out += _name_section(["dnsshim", "libdnsshim"], summary)
    out += [".SH SYNOPSIS", ".nf", f".B #include <{INCLUDE}>", ".fi", ".PP", "Link with",
            ".IR \\-ldnsshim ."]
    out += [".SH DESCRIPTION"] + render_blocks(intro, inline)
    out += [".PP", "The functions:"]
    for f in functions:
        out += [".TP", f".BR {esc(f, code=True)} (3)",
                line_safe(inline(short_summary(summaries.get(f, ""))))]

    status_enum = header.declaration("dns_shim_status")
    log_enum = header.declaration("dns_shim_log_level")
    # the conventions' "Environment." paragraph, and the blocks after it up
    # to the next paragraph with a title (its list of variables), make the
    # ENVIRONMENT section
    environment, in_environment = [], False
    for b in rest:
        if b.kind not in ("heading", "section") and in_environment:
            environment += render_blocks([b], inline, item_font="B")
            continue
        in_environment = False
        if b.kind == "heading":
            out.append(f".SH {b.title}")
        elif b.kind == "section":
            if b.title.lower() == "environment":
                environment = render_blocks([Block("para", text=b.text)], inline)
                in_environment = True
                out += [".SS Environment", "See", ".B ENVIRONMENT", "below."]
                continue
            out.append(f".SS {quote_arg(b.title)}")
            out += render_blocks([Block("para", text=b.text)], inline)
            if b.title.lower() == "status" and status_enum is not None:
                out += [".SS \"Status codes\""]
                out += render_blocks(classify(status_enum.comment), inline)
                out += [".PP"] + _status_table(status_enum, statuses)
        else:
            out += render_blocks([b], inline)
    if log_enum is not None:
        out += [".SS \"Log levels\""]
        out += render_blocks(classify(log_enum.comment), inline)
        handler = header.declaration("dns_shim_log_handler")
        if handler is not None:
            out += render_blocks(classify(handler.comment), inline)
        out += [".PP", "The levels (enum", ".BR dns_shim_log_level ):"]
        out += _member_list(log_enum, inline)
        out += [".PP", "See", ".BR dns_shim_set_log_handler (3)."]

    if header.bottom:
        bottom = classify(_dedent_sections(header.bottom), sections=True)
        for b in bottom:
            if b.kind == "heading":
                out.append(f".SH {b.title}")
            elif b.kind == "section":
                out.append(f".SS {quote_arg(b.title)}")
                out += render_blocks([Block("para", text=b.text)], inline)
            else:
                out += render_blocks([b], inline)
        for c in header.declarations:
            if c.kind == "version":
                out += render_blocks(classify(c.comment), inline)
                out += code_block(c.code_lines())

    types = [c for c in header.declarations if c.kind in ("struct", "enum", "typedef", "define")
             and c is not status_enum and c is not log_enum
             and not (handler is not None and c is handler if log_enum is not None else False)]
    if types:
        out.append(".SH \"DATA TYPES\"")
        for c in types:
            title = ", ".join(c.names) if c.kind != "typedef" or len(c.names) < 4 else "Callback types"
            out += _type_section(c, inline, title)

    if environment:
        out += [".SH ENVIRONMENT"] + environment
    if supplement:
        out += markdown_sections_roff(supplement, Inline(functions, backtick_font="B",
                                                          markdown=True))
    out += _see_also([(f, "3") for f in functions] + list(extra_see_also))
    return finish(out)


# --- the c-ares layer --------------------------------------------------------


def c_synopsis(code: list) -> tuple:
    """([#include line...], [prototype...]) of a SYNOPSIS code block: each
    prototype one line, up to its ';', its whitespace collapsed."""
    includes = [l.strip() for l in code if l.strip().startswith("#include")]
    text = re.sub(r"/\*.*?\*/", " ", "\n".join(l for l in code if not l.strip().startswith("#")),
                  flags=re.S)
    prototypes = [re.sub(r"\(\s+", "(", re.sub(r"\s+\)", ")", " ".join(p.split()))) + ";"
                  for p in text.split(";") if p.strip()]
    return includes, prototypes


def prototype_name(prototype: str) -> str:
    """The function a C prototype declares."""
    return re.search(r"(\w+)\s*\(", prototype).group(1)


def _split_synopsis(body: str) -> tuple:
    """(code lines, Markdown after the code) of a SYNOPSIS section's body:
    one fenced block of C, then prose (the link line)."""
    m = re.search(r"^```\w*\n(.*?)^```[ \t]*\n?", body, re.M | re.S)
    if m is None:
        raise ValueError("the SYNOPSIS has no fenced block of C prototypes")
    return m.group(1).split("\n"), body[m.end():]


def ares_page(map_text: str, source: str, version: str, description: str | None,
              functions: list, examples: dict | None = None) -> str:
    """dnsshim_ares.3 from its Markdown source (csrc/ares/dnsshim_ares.3.md):
    its SYNOPSIS, the prototype of every symbol the export list (map_text)
    names but the private ones (pipeline.private_export), in its order, with
    c-ares's headers; then its other sections;
    then examples/ares_classic.c and SEE ALSO."""
    symbols = [s for names in pipeline.export_nodes(map_text).values() for s in names
               if not pipeline.private_export(s)]
    sections = dict(markdown_sections(source))
    if "SYNOPSIS" not in sections:
        raise ValueError("dnsshim_ares.3's source has no ## SYNOPSIS")
    code, after = _split_synopsis(sections["SYNOPSIS"])
    includes, prototypes = c_synopsis(code)
    declared = [prototype_name(p) for p in prototypes]
    if declared != symbols:
        raise ValueError(f"dnsshim_ares.3's SYNOPSIS declares {declared}, the export list "
                         f"exports {symbols} (the same, in its order)")
    inline = Inline(list(functions) + symbols, backtick_font="B", markdown=True)
    out = title_lines("dnsshim_ares", "3", version)
    out += _name_section(["dnsshim_ares", "libdnsshim_ares"],
                         description or "c-ares's classic reply parsers")
    out += [".SH SYNOPSIS", ".nf"] + [f".B {esc(i, code=True)}" for i in includes]
    for prototype in prototypes:
        out += [".PP"] + _synopsis_prototype(prototype)
    out += [".fi"] + markdown_to_roff(after, inline)
    out += markdown_sections_roff(source, inline, skip=("SYNOPSIS",))
    if examples and "ares_classic.c" in examples:
        out += examples_section(["ares_classic.c"], examples, inline, "dnsshim-ares")
    out += _see_also([("dnsshim", "7"), ("process_dns_response", "3"),
                      ("dns_shim_set_parallelism", "3")]
                     + [(s, "3") for s in symbols if s.startswith("ares_parse_")][:1])
    return finish(out)


# --- the NSS module: section 8 from its Markdown source ---------------------------


def nss_page(source: str, version: str, functions: list) -> str:
    """libnss_dnsshim.8 from its Markdown source (csrc/nss/libnss_dnsshim.8.md):
    NAME, each "## " section, then SEE ALSO."""
    inline = Inline(list(functions), backtick_font="B", markdown=True)
    out = title_lines("libnss_dnsshim", "8", version)
    out += _name_section(["libnss_dnsshim"],
                         "glibc's hosts module whose DNS replies dnspython parses")
    out += markdown_sections_roff(source, inline)
    out += _see_also([("dnsshim", "7"), ("dnsshim-config", "1"), ("getaddrinfo", "3"),
                      ("nsswitch.conf", "5"), ("resolv.conf", "5")])
    return finish(out)


# --- the parse service: section 8 from its Markdown source -----------------------


def service_page(source: str, version: str, functions: list) -> str:
    """dnsshimd.8 from its Markdown source (csrc/service/dnsshimd.8.md):
    NAME, each "## " section, then SEE ALSO."""
    inline = Inline(list(functions), backtick_font="B", markdown=True)
    out = title_lines("dnsshimd", "8", version)
    out += _name_section(["dnsshimd"], "libdnsshim's parse service, on a Unix socket")
    out += markdown_sections_roff(source, inline)
    out += _see_also([("dnsshim", "7"), ("dnsshim-config", "1"), ("systemd.socket", "5"),
                      ("systemd.exec", "5")])
    return finish(out)


# --- tools: section 1 from --help ----------------------------------------------


def _usage_roff(usage: str) -> str:
    """A usage line's synopsis body: options bold, metavariables italic."""
    out = []
    for tok in re.findall(r"\[|\]|\||\.\.\.|[^\s\[\]|]+", usage):
        if tok in "[]|" or tok == "...":
            out.append(tok)
        elif tok.startswith("-") and len(tok) > 1:
            out.append(f"\\fB{esc(tok, code=True)}\\fP")
        elif re.fullmatch(r"[A-Z][A-Z0-9_]*(\.\.\.)?", tok):
            out.append(f"\\fI{esc(tok, code=True)}\\fP")
        else:
            out.append(esc(tok, code=True))
    text = ""
    for tok in out:
        if not text or text.endswith("[") or tok == "]" or (tok == "..." and text[-1] != " "):
            text += tok
        else:
            text += " " + tok
    return text


def _option_tag(spec: str) -> str:
    parts = []
    for alt in spec.split(", "):
        words = alt.split()
        tag = f"\\fB{esc(words[0], code=True)}\\fP"
        for w in words[1:]:
            tag += " " + (f"\\fI{esc(w, code=True)}\\fP" if re.fullmatch(r"[A-Z][\w.]*|\{.*\}", w)
                          else esc(w, code=True))
        parts.append(tag)
    return ", ".join(parts)


def parse_help(name: str, text: str) -> dict:
    """A tool's --help text as {"usages": [...], "notes": [...],
    "description": [...], "options": [(heading, [(spec, text)])],
    "after": [...]}."""
    lines = [l.rstrip() for l in text.expandtabs().split("\n")]
    # the program's name as it was called (a path) becomes its name
    prog = re.compile(rf"(?:\S*/)?{re.escape(name)}\b")
    usages, notes = [], []
    i = 0
    while i < len(lines) and not lines[i].strip():
        i += 1
    if i < len(lines) and lines[i].lower().startswith("usage:"):
        first = lines[i][6:].strip()
        cur = [prog.sub(name, first, count=1)]
        i += 1
        while i < len(lines) and lines[i].startswith(" ") and lines[i].strip():
            s = lines[i].strip()
            if prog.match(s):
                usages.append(" ".join(cur))
                cur = [prog.sub(name, s, count=1)]
            elif s.startswith("("):
                notes.append(s.strip("()"))
            else:
                cur.append(s)
            i += 1
        usages.append(" ".join(cur))
    description, options, after = [], [], []
    para = []
    heading = None

    def flush():
        nonlocal para
        if para:
            (after if options else description).append(join_lines(para))
        para = []

    while i < len(lines):
        line = lines[i]
        if not line.strip():
            flush()
            i += 1
            continue
        if re.fullmatch(r"[A-Za-z][\w ]*:", line):          # argparse's "options:"
            flush()
            heading = line[:-1]
            i += 1
            continue
        if line.startswith(" ") and re.match(r"\s+\S", line) and (
                line.strip().startswith("-") or heading is not None):
            flush()
            block = []
            while i < len(lines) and lines[i].startswith(" ") and lines[i].strip():
                block.append(lines[i])
                i += 1
            options.append((heading or "options", _option_items(block)))
            heading = None
            continue
        para.append(line)
        i += 1
    flush()
    return {"usages": usages, "notes": notes, "description": description,
            "options": options, "after": after}


def _option_items(block: list) -> list:
    """[(spec, text)] of an indented option list: the description column is
    the most common column where text starts after a gap of two spaces."""
    cols = Counter()
    for line in block:
        m = re.match(r"^(\s+\S.*?)\s{2,}(\S)", line)
        if m:
            cols[m.end() - 1] += 1
    col = cols.most_common(1)[0][0] if cols else None
    item_indent = min(len(l) - len(l.lstrip()) for l in block)
    items = []
    for line in block:
        indent = len(line) - len(line.lstrip())
        if indent == item_indent:
            if col is not None and len(line) > col and line[col - 1] == " " and line[col] != " " \
                    and line[item_indent:col].strip():
                spec, text = line[item_indent:col].strip(), line[col:].strip()
            else:
                m = re.match(r"^(\S.*?)\s{2,}(\S.*)$", line.strip())
                spec, text = (m.group(1), m.group(2)) if m else (line.strip(), "")
            items.append([spec, [text] if text else []])
        elif items:
            items[-1][1].append(line.strip())
    return [(spec, join_lines(text)) for spec, text in items]


def tool_page(name: str, help_text: str, version: str, others=(),
              supplement: str | None = None) -> str:
    """A tool's page from its --help text; supplement: Markdown whose ``## ``
    sections (EXAMPLES...) follow the help's (csrc/tools/NAME.1.md), but
    its DESCRIPTION, which goes on from the help's description."""
    h = parse_help(name, help_text)
    more = Inline(backtick_font="B", markdown=True)
    supplement_description = dict(markdown_sections(supplement or "")).get("DESCRIPTION", "")
    inline = Inline()
    desc = list(h["description"])
    summary = ""
    if desc:
        first = desc[0]
        first = re.sub(rf"^{re.escape(name)}:\s*", "", first)
        desc[0] = first[:1].upper() + first[1:]
        summary = sentence_lines(first)[0] if sentence_lines(first) else first
        summary = summary.split(": ")[0].rstrip(".")
        if summary[:1].isupper() and summary[1:2].islower():
            summary = summary[0].lower() + summary[1:]
    out = title_lines(name, "1", version) + _name_section([name], summary or name)
    out.append(".SH SYNOPSIS")
    for u in h["usages"] or [name]:
        rest = u[len(name):].strip() if u.startswith(name) else u
        out += [f".SY {esc(name, code=True)}", _usage_roff(rest) or "\\&", ".YS"]
    out.append(".SH DESCRIPTION")
    for d in desc:
        out += [".PP"] + [line_safe(inline(s)) for s in sentence_lines(d)]
    for n in h["notes"]:
        out += [".PP"] + [line_safe(inline(s))
                          for s in sentence_lines(n[:1].upper() + n[1:] + ".")]
    out += markdown_to_roff(supplement_description, more)
    exit_status, rest = [], []
    for a in h["after"]:
        (exit_status if re.match(r"(?i)exit status", a) else rest).append(a)
    if h["options"]:
        out.append(".SH OPTIONS")
        for heading, items in h["options"]:
            if len(h["options"]) > 1 or heading not in ("options", "optional arguments"):
                out.append(f".SS {quote_arg(heading[:1].upper() + heading[1:])}")
            for spec, text in items:
                out += [".TP", _option_tag(spec)]
                out += [line_safe(inline(s)) for s in sentence_lines(text[:1].upper() + text[1:])] or ["\\&"]
    if exit_status:
        out.append(".SH \"EXIT STATUS\"")
        for a in exit_status:
            a = re.sub(r"(?i)^exit status:\s*", "", a)
            out += [".PP"] + [line_safe(inline(s)) for s in sentence_lines(a)]
    if rest:
        out.append(".SH NOTES")
        for a in rest:
            out += [".PP"] + [line_safe(inline(s)) for s in sentence_lines(a)]
    if supplement:
        out += markdown_sections_roff(supplement, more, skip=("DESCRIPTION",))
    out += _see_also([(o, "1") for o in others if o != name] + [("dnsshim", "7")])
    return finish(out)


# ---------------------------------------------------------------------------


def _default_nodes(header: Header) -> tuple:
    """(prefix, first node) from the VERSIONING comment: DNSSHIM, DNSSHIM_1.0."""
    names = re.findall(r"\b([A-Z][A-Z0-9]*)_(\d+\.\d+)\b", "\n".join(header.bottom))
    if not names:
        return "DNSSHIM", "DNSSHIM_1.0"
    return names[0][0], f"{names[0][0]}_{names[0][1]}"


def pages(header_text: str, version: str, tools: dict, *, symbol_versions: dict | None = None,
          ares_map: str | None = None, ares_source: str | None = None,
          ares_description: str | None = None, examples: dict | None = None,
          overview_supplement: str | None = None,
          tool_supplements: dict | None = None, nss_source: str | None = None,
          service_source: str | None = None) -> dict:
    """Every manual page, {filename: roff text}.

    header_text: csrc/dns_shim.h.  version: the package's ("1.2.0").
    tools: {name: its --help output}.  symbol_versions: {function: node}
    (e.g. from the linker version script); without it a "(1.1)" marker in
    a function's comment gives DNSSHIM_1.1, no marker the first node; with
    it, a marker that disagrees is an error.  ares_map, ares_source: the
    c-ares layer's export list and its page's Markdown source (both needed
    for dnsshim_ares.3); ares_description: its one-line summary
    (dnsshim-ares.pc's).  examples: {file name: text} of examples/, for the
    comments' @example tags.  overview_supplement: Markdown sections for
    dnsshim.7 after its ENVIRONMENT; tool_supplements: {tool: Markdown
    sections for its page}; nss_source: libnss_dnsshim.8's Markdown source;
    service_source: dnsshimd.8's."""
    header = header_reader.parse(header_text)
    funcs = header.functions()
    names = [c.names[0] for c in funcs]
    if names != header.function_names():
        raise ValueError(f"a function of the header has no comment of its own: the pages "
                         f"have {names}, the header declares {header.function_names()}")
    prefix, first_node = _default_nodes(header)
    statuses = (header.enum("dns_shim_status") if header.declaration("dns_shim_status")
                else None)
    see_tools = [(t, "1") for t in tools]
    extra = [("dnsshim_ares", "3")] if ares_map and ares_source else []
    if nss_source:
        extra.append(("libnss_dnsshim", "8"))
    if service_source:
        extra.append(("dnsshimd", "8"))
    out = {}
    summaries = {}
    for c in funcs:
        name = c.names[0]
        marker = release_marker(c.comment[0]) if c.comment else None
        node = f"{prefix}_{marker}" if marker else first_node
        if symbol_versions is not None:
            given = symbol_versions.get(name)
            if given is None:
                raise ValueError(f"{name}: no symbol version given for it")
            if marker and given != node:
                raise ValueError(f"{name}: its comment says ({marker}), the version script {given}")
            node = given
        first = join_lines(blocks(c.comment)[0]) if c.comment else ""
        m = re.match(rf"^{re.escape(name)}\s*(?:\(\d+\.\d+\))?\s*:\s*(.*)$", first, re.S)
        summaries[name] = sentence_lines(m.group(1))[0] if m else ""
        out[f"{name}.3"] = function_page(header, c, version, node, names, examples=examples,
                                         statuses=statuses)
    out["dnsshim.7"] = overview_page(header, version, names, summaries, extra + see_tools,
                                     statuses, overview_supplement)
    if ares_map and ares_source:
        out["dnsshim_ares.3"] = ares_page(ares_map, ares_source, version, ares_description,
                                          names, examples=examples)
    if nss_source:
        out["libnss_dnsshim.8"] = nss_page(nss_source, version, names)
    if service_source:
        out["dnsshimd.8"] = service_page(service_source, version, names)
    for t, text in tools.items():
        out[f"{t}.1"] = tool_page(t, text, version, others=list(tools),
                                  supplement=(tool_supplements or {}).get(t))
    return out


SOURCE_ROOT = Path(__file__).resolve().parent.parent    # the tree holding shim/


#: The Markdown sources of pages (or of parts of pages) in a project tree.
ARES_SOURCE = Path("csrc") / "ares" / "dnsshim_ares.3.md"
OVERVIEW_SOURCE = Path("csrc") / "dnsshim.7.md"
TOOL_SOURCES = Path("csrc/tools")              # NAME.1.md, for a tool NAME
NSS_SOURCE = Path("csrc") / "nss" / "libnss_dnsshim.8.md"
SERVICE_SOURCE = Path("csrc") / "service" / "dnsshimd.8.md"


def pages_from_tree(root, version: str | None = None, tools: dict | None = None) -> dict:
    """pages() from a project tree: csrc/dns_shim.h, the version scripts,
    the Markdown sources (ARES_SOURCE, OVERVIEW_SOURCE, TOOL_SOURCES/NAME.1.md,
    NSS_SOURCE, SERVICE_SOURCE),
    csrc/ares/dnsshim-ares.pc.in's Description and examples/."""
    root = Path(root)
    header = (root / "csrc" / "dns_shim.h").read_text(encoding="utf-8")
    if version is None:
        version = pipeline.header_version(root / "csrc" / "dns_shim.h")
    nodes = pipeline.export_nodes(
        (root / "csrc" / "lib" / "libdnsshim.map").read_text(encoding="utf-8"))
    symbol_versions = {s: node for node, syms in nodes.items() for s in syms}
    pc = (root / "csrc" / "ares" / "dnsshim-ares.pc.in").read_text(encoding="utf-8")
    m = re.search(r"^Description:\s*(.*)$", pc, re.M)
    examples = {f.name: f.read_text(encoding="utf-8")
                for f in sorted((root / "examples").glob("*.c"))}
    tools = tools or {}
    supplements = {t: (root / TOOL_SOURCES / f"{t}.1.md").read_text(encoding="utf-8")
                   for t in tools if (root / TOOL_SOURCES / f"{t}.1.md").is_file()}
    return pages(header, version, tools, symbol_versions=symbol_versions, examples=examples,
                 ares_map=(root / "csrc" / "ares" / "libdnsshim_ares.map").read_text(encoding="utf-8"),
                 ares_source=(root / ARES_SOURCE).read_text(encoding="utf-8"),
                 ares_description=m.group(1) if m else None,
                 overview_supplement=(root / OVERVIEW_SOURCE).read_text(encoding="utf-8"),
                 tool_supplements=supplements,
                 nss_source=(root / NSS_SOURCE).read_text(encoding="utf-8"),
                 service_source=(root / SERVICE_SOURCE).read_text(encoding="utf-8"))




def write_pages(mandir: Path, tools: dict[str, str], root: Path | None = None) -> list[Path]:
    """Writes the pages of the source tree root (default: the one this
    package is in) into mandir/man1, man3, man7 and man8, with a page for each of
    tools ({name: its --help text}); returns the paths written, sorted."""
    root = Path(root) if root is not None else SOURCE_ROOT
    if not (root / "csrc" / "dns_shim.h").is_file():
        raise FileNotFoundError(f"{root} is not dnsshim's source tree (no csrc/dns_shim.h)")
    written = []
    for name, text in pages_from_tree(root, version=None, tools=tools).items():
        directory = Path(mandir) / f"man{name.rsplit('.', 1)[1]}"
        directory.mkdir(parents=True, exist_ok=True)
        (directory / name).write_text(text, encoding="ascii")
        written.append(directory / name)
    return sorted(written)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m dnsshim_build.man",
                                description="Write the manual pages of this source tree.")
    p.add_argument("--out", required=True, type=Path, help="directory for the manN/ directories")
    p.add_argument("--tool", action="append", default=[], metavar="NAME=HELPFILE",
                   help="a tool and a file holding its --help output (repeatable)")
    args = p.parse_args(argv)
    tools = {}
    for spec in args.tool:
        name, sep, path = spec.partition("=")
        if not sep:
            p.error(f"--tool {spec}: NAME=HELPFILE expected")
        tools[name] = Path(path).read_text(encoding="utf-8")
    for path in write_pages(args.out, tools):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
