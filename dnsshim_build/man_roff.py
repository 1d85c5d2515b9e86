"""Writing roff for the manual pages (:mod:`dnsshim_build.man`): escaping text and
macro arguments, inline markup to fonts (:class:`Inline`), code blocks with
long C declarations wrapped, a page's ``.TH`` line and its final clean-up.

Every line it writes is ASCII and safe at the start of a roff input line;
a page has no date, no blank line and no trailing whitespace.  Standard
library only.
"""

import re

MANUALS = {"1": "User Commands", "3": "Library Functions Manual",
           "7": "Miscellaneous Information Manual",
           "8": "System Manager's Manual"}


CODE_WIDTH = 66          # columns for code in .EX blocks (page body indent: 7)


def _hyphen_is_minus(text: str, i: int) -> bool:
    """Whether text[i] == '-' is meant as a minus (an option's dash, a
    negative number, a command or file name) rather than a word's hyphen."""
    prev = text[i - 1] if i > 0 else " "
    nxt = text[i + 1] if i + 1 < len(text) else " "
    if not prev.isalnum() or prev == "-" or nxt == "-":
        return True
    if i == 1 or not text[i - 2].isalnum():      # c-ares, x-foo: a name
        return True
    start = max(text.rfind(" ", 0, i), text.rfind("(", 0, i)) + 1
    end = len(text)
    for stop in (" ", ")"):
        j = text.find(stop, i)
        if j != -1:
            end = min(end, j)
    token = text[start:end]
    return (any(c in token for c in "/_=") or token.startswith(("dnsshim", "lib", "python"))
            or bool(re.search(r"\.\w", token)))


def esc(text: str, code: bool = False) -> str:
    """Text for a roff text line (or a macro argument without quotes):
    backslashes, minus signs, non-ASCII characters.  In code every '-' is a
    minus sign."""
    out = []
    for i, c in enumerate(text):
        if c == "\\":
            out.append("\\e")
        elif c == "-":
            out.append("\\-" if code or _hyphen_is_minus(text, i) else "-")
        elif ord(c) > 126 or (ord(c) < 32 and c != "\t"):
            out.append(f"\\[u{ord(c):04X}]")
        else:
            out.append(c)
    return "".join(out)


def line_safe(line: str) -> str:
    """A text line that roff does not take for a request or a blank line."""
    line = line.rstrip()
    if line.startswith((".", "'")):
        return "\\&" + line
    if line.startswith(" ") and line.strip():
        return line   # in no-fill mode: wanted
    return line


def quote_arg(text: str) -> str:
    """A macro argument in double quotes."""
    return '"' + text.replace('"', "\\(dq") + '"'


def sentence_lines(text: str) -> list:
    """One input line per sentence (the header's sentences end with two
    spaces), so that roff spaces sentences itself and no line is too long."""
    parts = re.split(r"(?<=[.!?:;])\s{2,}|(?<=[.!?][)\"'])\s{2,}", text.strip())
    return [re.sub(r"\s+", " ", p).strip() for p in parts if p.strip()]


class Inline:
    """Inline markup to roff fonts: `code` (italic in the header, where it
    marks a parameter or member; bold in Markdown), **bold**, [text](link),
    and the library's functions (bold), name() or bare."""

    def __init__(self, functions=(), backtick_font="I", markdown=False):
        self.functions = set(functions)
        self.backtick_font = backtick_font
        self.markdown = markdown
        pattern = [r"`(?P<code>[^`]+)`", r"\*\*(?P<bold>.+?)\*\*",
                   r"\b(?P<call>\w+)\(\)"]
        if self.functions:
            names = "|".join(sorted(map(re.escape, self.functions), key=len, reverse=True))
            pattern.append(rf"\b(?P<name>{names})\b(?!\()")
        if markdown:
            pattern.append(r"\[(?P<link>[^\]]+)\]\([^)]*\)")
        self.pattern = re.compile("|".join(pattern))

    def __call__(self, text: str) -> str:
        out = []
        pos = 0
        for m in self.pattern.finditer(text):
            out.append(esc(text[pos:m.start()]))
            g = m.groupdict()
            if g["code"] is not None:
                inner = g["code"]
                name = inner[:-2] if inner.endswith("()") else inner
                if name in self.functions:
                    out.append(f"\\fB{esc(name)}\\fP" + ("()" if inner.endswith("()") else ""))
                else:
                    out.append(f"\\f{self.backtick_font}{esc(inner, code=True)}\\fP")
            elif g["bold"] is not None:
                out.append(f"\\fB{self(g['bold'])}\\fP")
            elif g["call"] is not None:
                name = g["call"]
                out.append(f"\\fB{esc(name)}\\fP()" if name in self.functions or
                           name.startswith(("dns_shim_", "ares_")) else esc(m.group(0)))
            elif g.get("name") is not None:
                out.append(f"\\fB{esc(g['name'])}\\fP")
            else:
                out.append(self(g["link"]))
            pos = m.end()
        out.append(esc(text[pos:]))
        return "".join(out)


def code_block(lines: list, wrap: bool = True) -> list:
    """A literal block; wrap: break long declarations (wrap_decl), which a
    program's body (an example) must not be, whose lines are shown as written."""
    out = [".PP", ".in +4n", ".EX"]
    for line in lines:
        for piece in (wrap_decl(line.rstrip()) if wrap else [line.rstrip()]):
            out.append(line_safe(esc(piece, code=True)) if piece.strip() else "")
    out += [".EE", ".in"]
    # roff treats an empty line as a blank line: write it as \& instead.
    return [l if l else "\\&" for l in out]


def split_top(text: str, sep: str = ",") -> list:
    parts, depth, cur = [], 0, ""
    for c in text:
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        if c == sep and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += c
    parts.append(cur)
    return parts


def wrap_decl(line: str, width: int = CODE_WIDTH) -> list:
    """A C declaration line longer than width, broken after commas of its
    last parameter list and aligned on its opening parenthesis."""
    if len(line) > width and line.startswith("#define") and "," not in line:
        words, lines, cur = line.split(" "), [], ""
        for w in words:
            if cur and len(cur) + 1 + len(w) > width - 2:
                lines.append(cur + " \\")
                cur = "    " + w
            else:
                cur = f"{cur} {w}" if cur else w
        return lines + [cur]
    if len(line) <= width or not line.rstrip().endswith((");", ")", ");")):
        return [line]
    close = line.rstrip().rfind(")")
    depth, open_ = 0, -1
    for i in range(close, -1, -1):
        if line[i] == ")":
            depth += 1
        elif line[i] == "(":
            depth -= 1
            if depth == 0:
                open_ = i
                break
    if open_ < 0:
        return [line]
    params = [p.strip() for p in split_top(line[open_ + 1:close])]
    head, tail = line[:open_ + 1], line[close:]
    indent = " " * (open_ + 1)
    lines, cur = [], head
    for n, p in enumerate(params):
        piece = p + ("," if n < len(params) - 1 else tail)
        if cur in (head, indent) or len(cur) + 1 + len(piece) <= width:
            cur = cur + ("" if cur in (head, indent) else " ") + piece
        else:
            lines.append(cur)
            cur = indent + piece
    lines.append(cur)
    return lines


def title_lines(name: str, section: str, version: str) -> list:
    # the date field is empty on purpose: reproducible builds
    return [f".TH {esc(name, code=True)} {section} \"\" "
            f"{quote_arg('dnsshim ' + version)} {quote_arg(MANUALS[section])}",
            # identifiers are not hyphenated (HY: an-ext's .EE and .YS
            # restore hyphenation from it), lines are not justified
            ".nr HY 0", ".nh", ".ad l"]


def finish(lines: list) -> str:
    out = []
    for line in lines:
        if line is None:
            continue
        line = line.rstrip()
        if not line:
            continue          # a blank line is a blank output line in roff
        out.append(line)
    # .PP right after a section heading, or twice, is redundant
    clean = []
    for line in out:
        if line == ".PP" and clean and (clean[-1].startswith((".SH", ".SS", ".PP", ".TP"))):
            continue
        clean.append(line)
    text = "\n".join(clean) + "\n"
    if "\n.TS" in text:
        text = "'\\\" t\n" + text
    return text
