"""The one reader of this project's C headers: ``csrc/dns_shim.h`` (the ABI)
and ``csrc/ares/dnsshim_ares.h`` (the c-ares layer's data).

:func:`parse` reads a header's text once into a :class:`Header`:

* its declarations (:class:`Declaration`), each with the column-0 comment
  above it: functions (``DNS_SHIM_API``) with their prototypes, enums with
  their enumerators and values, structs with their members (each with its
  comment), typedefs, defines;
* its integer ``#define`` lines (name and value), and from them its version;
* its top comment (the conventions) and its bottom one (VERSIONING).

What the rest of the build takes from a header is read here and nowhere
else: cffi's declarations (:meth:`Header.cdef`), the status codes
(:meth:`Header.enum`), the exported functions (:meth:`Header.function_names`),
the version, the integer defines, the manual pages' declarations and
comments (dnsshim_build/man.py), and the sizes a versioned struct has had
in each release (:meth:`Header.struct_releases`).

A versioned struct (one whose first member is ``struct_size``) belongs to
the release its comment names in parentheses ("(1.1) The query ...", none:
the first release, 1.0); a member that a later release appends is preceded
by a comment on a line of its own naming that release and nothing else
(``/* 1.1 */``), and so are the members after it up to the next such comment.

Standard library only: the build reads headers where nothing else is
installed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

#: The release a versioned struct or a function without a "(X.Y)" marker
#: in its comment belongs to.
FIRST_RELEASE = "1.0"

# ---------------------------------------------------------------------------
# Comments


def comment_text(comment: str) -> list:
    """The lines of a /* ... */ comment without its markers: '**' and one
    space taken off each line, deeper indentation kept."""
    body = comment.strip()
    assert body.startswith("/*") and body.endswith("*/"), body[:40]
    body = body[2:-2]
    lines = []
    for n, line in enumerate(body.split("\n")):
        if n == 0:
            line = line[1:] if line.startswith(" ") else line
        else:
            stripped = line.lstrip()
            if stripped.startswith("**"):
                line = stripped[2:]
                line = line[1:] if line.startswith(" ") else line
            else:
                line = stripped
        lines.append(line.rstrip())
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return lines


def join_lines(lines: list) -> str:
    """Lines of text as one text; a line that ends a sentence is followed
    by two spaces, as the header writes sentences inside a line."""
    text = ""
    for line in lines:
        line = line.strip()
        if not text:
            text = line
        elif re.search(r"[.!?][)\"']?$", text) and not text.endswith(("e.g.", "i.e.", "...")):
            text += "  " + line
        else:
            text += " " + line
    return text


def release_marker(text: str):
    """The release a "(1.1)" in a comment's text names, or None."""
    m = re.search(r"\((\d+\.\d+)\)", text)
    return m.group(1) if m else None


def _release_key(release: str) -> tuple:
    return tuple(int(part) for part in release.split("."))


def _uncommented(code: str) -> str:
    return re.sub(r"/\*.*?\*/", "", code, flags=re.S)


# ---------------------------------------------------------------------------
# Declarations


@dataclass
class Member:
    """An enumerator or a struct member, with its comment."""
    name: str
    decl: str
    comment: str = ""
    heading: str = ""          # an own-line comment before it (a group title)
    shared_with: str = ""      # the next member, when both share one comment
    #: the text of the comment on the line(s) of their own right above it
    #: (before the rule below decides whether it is its description or a
    #: group title)
    above: str = ""


@dataclass
class Declaration:
    """One column-0 comment and the code after it, up to the next one."""
    comment: list
    code: str
    kind: str = ""             # function, enum, struct, typedef, version, define, other
    names: list = field(default_factory=list)
    members: list = field(default_factory=list)
    prototype: str = ""

    def code_lines(self) -> list:
        """The declaration's code without comments, preprocessor guards or
        the API marker, as lines (a manual page's .EX block)."""
        lines = []
        for line in _uncommented(self.code).split("\n"):
            if re.match(r"\s*#\s*(if|endif|else|ifn?def|undef)", line) or line.strip() in (
                    "DNS_SHIM_BEGIN_DECLS", "DNS_SHIM_END_DECLS"):
                continue
            line = line.replace("DNS_SHIM_API ", "").rstrip()
            line = re.sub(r"(\S)  +", r"\1 ", line)
            if line.strip():
                lines.append(line)
        return lines


def _member_tokens(body: str):
    """(start, end, text, is_comment) of an enum or struct body: comments, and
    declarations ending at ',' or ';' outside parentheses (a function-pointer
    member's parameter list is one declaration) or where a comment begins."""
    depth, start, i = 0, 0, 0
    while i < len(body):
        if body.startswith("/*", i):
            end = body.find("*/", i + 2)
            end = len(body) if end < 0 else end + 2
            if depth == 0:
                if body[start:i].strip():
                    yield start, i, body[start:i], False
                yield i, end, body[i:end], True
                start = end
            i = end
            continue
        c = body[i]
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c in ",;" and depth == 0:
            yield start, i + 1, body[start:i + 1], False
            start = i + 1
        i += 1
    if body[start:].strip():
        yield start, len(body), body[start:], False


def _member_name(decl: str):
    """The member a declaration declares: an enumerator, a function
    pointer's name, an array's or a plain member's."""
    m = (re.match(r"^(\w+)\s*=", decl) or re.search(r"\(\s*\*\s*(\w+)\s*\)\s*\(", decl)
         or re.search(r"(\w+)\s*(?:\[[^\]]*\])?$", decl))
    return m.group(1) if m else None


def _members(body: str) -> list:
    """Members of an enum or struct body with their comments: the comment
    before a member (on lines of its own) or after it on the same line."""
    out, pending = [], ""
    last_end = None
    for start, end, tok, is_comment in _member_tokens(body):
        if is_comment:
            text = join_lines(comment_text(tok))
            same_line = last_end is not None and "\n" not in body[last_end:start]
            if same_line and out and not out[-1].comment:
                out[-1].comment = text
            else:
                pending = text
            continue
        decl = " ".join(_uncommented(tok).strip().rstrip(",;").split())
        name = _member_name(decl) if decl else None
        if not name:
            continue
        member = Member(name, decl, above=pending)
        if pending:
            # a comment before the member: its description if the next
            # member's comment is trailing (a group title), checked below
            member.heading = pending
        out.append(member)
        pending = ""
        last_end = end
    # One sentence written across two members' comments ("... 0 when" /
    # "qdcount is 0"): both members get the whole sentence.
    for a, b in zip(out, out[1:]):
        if a.comment and b.comment and re.search(
                r"\b(when|and|or|of|the|a|an|if|than|whose)$", a.comment):
            a.comment = b.comment = a.comment + " " + b.comment
            b.heading = b.heading or ""
            a.shared_with = b.name
    # A comment before a member that also has a trailing comment is a group
    # title; one before a member without is that member's description.
    for member in out:
        if member.heading and not member.comment:
            member.comment, member.heading = member.heading, ""
    return out


def _split_decls(code: str) -> list:
    """Top-level declarations (up to ';' outside braces) of a piece of C."""
    out, cur, depth = [], "", 0
    stripped = re.sub(r"/\*.*?\*/", lambda m: m.group(0).replace(";", "\0"), code, flags=re.S)
    for c in stripped:
        cur += c
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif c == ";" and depth == 0:
            out.append(cur.replace("\0", ";"))
            cur = ""
    if cur.strip():
        if out:
            out[-1] += cur.replace("\0", ";")
        else:
            out.append(cur.replace("\0", ";"))
    return out


_API = re.compile(r"^DNS_SHIM_API\s+(.*?);", re.M | re.S)
_API_NAME = re.compile(r"^DNS_SHIM_API\s[^;(]*?\b(\w+)\s*\(", re.M)


def _classify(d: Declaration) -> None:
    code = d.code
    api = _API.search(code)
    if api:
        d.kind = "function"
        d.prototype = " ".join(api.group(1).split()).replace("( ", "(").replace(" )", ")") + ";"
        d.names = _API_NAME.findall(code)
    elif re.search(r"typedef\s+(enum|struct)", code):
        d.kind = "enum" if re.search(r"typedef\s+enum", code) else "struct"
        d.members = _members(re.search(r"\{(.*)\}", code, re.S).group(1))
        d.names = re.findall(r"\}\s*(\w+)\s*;", code)
    elif re.search(r"^typedef\b", code, re.M):
        d.kind = "typedef"
        d.names = re.findall(r"\(\s*\*\s*(\w+)\s*\)", code) or re.findall(r"(\w+)\s*;", code)
    elif re.search(r"^#define\s+DNS_SHIM_VERSION", code, re.M):
        d.kind = "version"
        d.names = re.findall(r"^#define\s+(\w+)", code, re.M)
    elif re.search(r"^#define\s+\w+", code, re.M):
        d.kind = "define"
        d.names = re.findall(r"^#define\s+(\w+)", code, re.M)
    else:
        d.kind = "other"


# ---------------------------------------------------------------------------
# Preprocessor lines

#: An integer #define (a trailing comment allowed): name, value, the comment.
_INT_DEFINE = re.compile(r"#\s*define\s+(\w+)\s+(-?\d+)\s*(/\*.*)?$")
#: The prefixes of this project's integer defines, the ones cffi is given.
_OWN_DEFINES = ("DNS_SHIM_", "DNSSHIM_ARES_")
#: What only means something to a C compiler: cffi is given the code without.
_MARKERS = re.compile(r"\b(DNS_SHIM_API|DNS_SHIM_BEGIN_DECLS|DNS_SHIM_END_DECLS"
                      r"|DNSSHIM_ARES_INTERNAL)\b")
#: csrc/ares/dnsshim_ares.h's mark of its Python side's functions: extern "Python".
_PYTHON_MARKER = re.compile(r"\bDNSSHIM_ARES_PYTHON\b")


@dataclass
class Line:
    """One line of a header: its text, and when it is a preprocessor line,
    the integer define it makes (name, value, whether a comment follows)."""
    text: str
    directive: bool = False
    define: tuple = ()


def _lines(text: str) -> list:
    out = []
    for line in text.splitlines(True):
        stripped = line.strip()
        m = _INT_DEFINE.match(stripped) if stripped.startswith("#") else None
        out.append(Line(line, stripped.startswith("#"),
                        (m.group(1), int(m.group(2)), bool(m.group(3))) if m else ()))
    return out


# ---------------------------------------------------------------------------
# The header


@dataclass
class Header:
    text: str
    top: list
    bottom: list
    declarations: list
    lines: list

    # --- declarations -------------------------------------------------------

    def functions(self) -> list:
        """The functions' declarations (DNS_SHIM_API), in the header's order."""
        return [d for d in self.declarations if d.kind == "function"]

    def function_names(self) -> list:
        """Every function the header exports (DNS_SHIM_API), in its order."""
        return [name for d in self.functions() for name in d.names]

    def declaration(self, name: str):
        """The declaration of a type, function or define by its name, or None."""
        for d in self.declarations:
            if name in d.names:
                return d
        return None

    def enum(self, name: str) -> dict:
        """``{enumerator: value}`` of ``typedef enum name {...} name;``."""
        d = self.declaration(name)
        if d is None or d.kind != "enum":
            raise KeyError(f"no enum {name} in the header")
        return {m.name: int(m.decl.split("=", 1)[1]) for m in d.members}

    def struct(self, name: str) -> list:
        """The members of ``typedef struct name {...} name;``, in order."""
        d = self.declaration(name)
        if d is None or d.kind != "struct":
            raise KeyError(f"no struct {name} in the header")
        return d.members

    def versioned_structs(self) -> list:
        """The structs whose first member is struct_size, in order."""
        return [name for d in self.declarations if d.kind == "struct" and d.members
                and d.members[0].name == "struct_size" for name in d.names]

    def struct_releases(self, name: str) -> list:
        """``[(release, first member of the next release or None)]`` of a
        versioned struct: one entry per release that made it (its own, then
        each that appended members), so that its size in that release is
        the offset of that member, or, for the last, its sizeof."""
        d = self.declaration(name)
        release = release_marker(d.comment[0]) if d.comment else None
        out = [[release or FIRST_RELEASE, None]]
        for m in self.struct(name)[1:]:
            if re.fullmatch(r"\d+\.\d+", m.above):
                if _release_key(m.above) <= _release_key(out[-1][0]):
                    raise ValueError(f"{name}: the members from {m.name} on are marked "
                                     f"{m.above}, not a release after {out[-1][0]}")
                out[-1][1] = m.name
                out.append([m.above, None])
        return [tuple(r) for r in out]

    # --- preprocessor lines -------------------------------------------------

    def defines(self, prefix: str = "") -> dict:
        """``{name: value}`` of the integer ``#define PREFIX...`` lines."""
        return {line.define[0]: line.define[1] for line in self.lines
                if line.define and line.define[0].startswith(prefix)}

    def version(self) -> str:
        """"MAJOR.MINOR.PATCH" of DNS_SHIM_VERSION_*."""
        defines = self.defines("DNS_SHIM_VERSION_")
        return ".".join(str(defines[f"DNS_SHIM_VERSION_{part}"])
                        for part in ("MAJOR", "MINOR", "PATCH"))

    def cdef(self) -> str:
        """The declarations as cffi's cdef() takes them: the header without
        its preprocessor lines (this project's integer #defines written
        without a comment excepted) and without the markers that only mean
        something to a C compiler; DNSSHIM_ARES_PYTHON reads as extern
        "Python"."""
        out = []
        for line in self.lines:
            if line.directive and not (line.define and not line.define[2]
                                       and line.define[0].startswith(_OWN_DEFINES)):
                continue
            out.append(_PYTHON_MARKER.sub('extern "Python"', _MARKERS.sub("", line.text)))
        return "".join(out)


def parse(text: str) -> Header:
    """A header's text, read: see the module's comment."""
    comments = list(re.finditer(r"^/\*.*?\*/", text, re.M | re.S))
    chunks = []
    for n, m in enumerate(comments):
        end = comments[n + 1].start() if n + 1 < len(comments) else len(text)
        chunks.append(Declaration(comment_text(m.group(0)), text[m.end():end]))
    top = chunks.pop(0) if chunks else Declaration([], "")
    split = []
    for c in chunks:
        decls = _split_decls(c.code)
        if len(decls) > 1 and sum(bool(re.match(r"typedef\s+(struct|enum)", d.strip()))
                                  for d in decls) > 1:
            split.append(Declaration(c.comment, decls[0]))
            split += [Declaration([], d) for d in decls[1:]]
        else:
            split.append(c)
    chunks = split
    bottom = None
    for c in chunks:
        if c.comment and c.comment[0].strip() == "VERSIONING":
            bottom = c
    if bottom is not None:
        chunks.remove(bottom)
    for c in chunks:
        _classify(c)
    return Header(text, top.comment, bottom.comment if bottom else [], chunks, _lines(text))


def read(path) -> Header:
    """parse() of a header file."""
    return parse(Path(path).read_text(encoding="utf-8"))
