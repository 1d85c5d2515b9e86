"""Markdown to roff for the manual pages (:mod:`dnsshim_build.man`): the
Markdown sources of pages, or parts of pages, that the header's comments do
not make (``csrc/ares/dnsshim_ares.3.md``, ``csrc/dnsshim.7.md``,
``csrc/tools/dnsshim-config.1.md``), in the subset of Markdown they use
(``## `` sections, ``### `` subsections, paragraphs, ``- `` lists, fenced
code, tables, inline code, bold, links; ``<!-- -->`` comments are left
out).  Standard library only.
"""

import re

from dnsshim_build.man_roff import Inline, code_block, esc, line_safe, quote_arg


def markdown_sections(md: str) -> list:
    """[(title, body)] of a page's Markdown source: its ``## `` sections, in
    order; what comes before the first (the file's title and comments) and
    every ``<!-- -->`` comment are left out."""
    md = re.sub(r"<!--.*?-->\n?", "", md, flags=re.S)
    parts = re.split(r"^## +(.+?)[ \t]*$", md, flags=re.M)
    return [(parts[i].strip(), parts[i + 1]) for i in range(1, len(parts), 2)]


def markdown_sections_roff(md: str, inline: Inline, skip=()) -> list:
    """Each ``## `` section of a page's Markdown source as a section of the
    page (.SH with the title), but those whose title is in skip."""
    out = []
    for title, body in markdown_sections(md):
        if title in skip:
            continue
        out.append(f".SH {quote_arg(title) if ' ' in title else title}")
        out += markdown_to_roff(body, inline)
    return out


def markdown_to_roff(md: str, inline: Inline) -> list:
    """A Markdown subset (paragraphs, '- ' lists, fenced code, tables,
    ### headings, inline code, bold, links) as roff."""
    out = []
    lines = md.strip("\n").split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        if line.startswith("```"):
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            out += code_block(lines[i + 1:j])
            i = j + 1
            continue
        if line.startswith("#"):
            out.append(f".SS {quote_arg(re.sub(r'[`*]', '', line.lstrip('#').strip()))}")
            i += 1
            continue
        if line.startswith("|"):
            rows = []
            while i < len(lines) and lines[i].startswith("|"):
                cells = [c.strip() for c in _split_md_row(lines[i])]
                if not all(re.fullmatch(r":?-+:?", c) for c in cells):
                    rows.append(cells)
                i += 1
            head, body = rows[0], rows[1:]
            for row in body:
                out += [".TP", line_safe(inline(row[0]))]
                for h, c in zip(head[1:], row[1:]):
                    out.append(line_safe(f"\\fI{esc(h.replace('`', ''))}\\fP: {inline(c)}"))
                    out.append(".br")
                if out[-1] == ".br":
                    out.pop()
            continue
        if line.startswith("- "):
            while i < len(lines) and lines[i].startswith("- "):
                item = [lines[i][2:]]
                i += 1
                while i < len(lines) and lines[i].startswith("  ") and lines[i].strip():
                    item.append(lines[i].strip())
                    i += 1
                out += [".IP \\(bu 2"] + [line_safe(inline(s))
                                          for s in _md_sentences(" ".join(item))]
                while i < len(lines) and not lines[i].strip():
                    i += 1
            continue
        para = []
        while i < len(lines) and lines[i].strip() and not lines[i].startswith(("```", "|", "- ", "#")):
            para.append(lines[i].strip())
            i += 1
        out.append(".PP")
        out += [line_safe(inline(s)) for s in _md_sentences(" ".join(para))]
    return out


def _split_md_row(line: str) -> list:
    """The cells of a Markdown table row ('|' inside `code` does not split)."""
    cells, cur, code = [], "", False
    for c in line.strip().strip("|"):
        if c == "`":
            code = not code
        if c == "|" and not code:
            cells.append(cur)
            cur = ""
        else:
            cur += c
    cells.append(cur)
    return cells


def _md_sentences(text: str) -> list:
    """Markdown sentences end with one space; split there, outside `code`."""
    parts, cur, code = [], "", False
    for n, c in enumerate(text):
        if c == "`":
            code = not code
        cur += c
        if (not code and c == " " and re.search(r"[A-Za-z0-9)][.!?]\)? $", cur)
                and n + 1 < len(text) and (text[n + 1].isupper() or text[n + 1] in "`*")
                and not re.search(r"\b(e\.g|i\.e|etc|vs)\. $", cur)):
            parts.append(cur.strip())
            cur = ""
    if cur.strip():
        parts.append(cur.strip())
    return parts
