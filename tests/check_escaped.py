#!/usr/bin/env python3
"""Checks that pages written from hostile strings hold them only as text.

usage: check_escaped.py html PAGE.html NEEDLE...   (a study report or bench page)
       check_escaped.py md PAGE.md NEEDLE...
       check_escaped.py csv FILE.csv NEEDLE...
Each NEEDLE is a hostile string (markup, quotes, pipes, newlines, backticks,
links) that the data held; it must come back as text: HTML and CSV decode to
it exactly; Markdown, whose escaping turns newlines into spaces, with
newlines read as spaces. Prints one line per problem, exits 1 if any.
"""
import csv
import html.parser
import re
import sys

# Every element and attribute the report and the bench pages write.
TAGS = {"html", "head", "meta", "title", "style", "body", "section", "h1", "h2", "h3", "h4", "p", "b", "ul", "li", "code",
        "table", "tr", "th", "td", "details", "summary", "figure", "figcaption", "svg", "rect", "line", "text", "g",
        "polyline", "circle"}
ATTRS = {"lang", "charset", "http-equiv", "content", "id", "class", "data-series", "data-name", "xmlns", "width",
         "height", "viewbox", "role", "font-family", "font-size", "x", "y", "x1", "x2", "y1", "y2", "fill", "stroke",
         "stroke-width", "text-anchor", "transform", "points", "cx", "cy", "r", "fill-opacity", "font-weight"}


class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.problems, self.text, self.csp, self.stack = [], [], None, []

    def handle_starttag(self, tag, attrs):
        if tag not in TAGS:
            self.problems.append(f"element <{tag}> reached the page")
        for k, v in attrs:
            if k not in ATTRS:
                self.problems.append(f"attribute {k}={v!r} on <{tag}> reached the page")
        a = dict(attrs)
        if tag == "meta" and a.get("http-equiv", "").lower() == "content-security-policy":
            self.csp = a.get("content", "")
        self.stack.append(tag)

    def handle_endtag(self, tag):
        if self.stack and self.stack[-1] == tag:
            self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)
        if self.stack and self.stack[-1] == "script":
            self.problems.append(f"data inside <script>: {data[:60]!r}")


def check_html(path, needles):
    p = Page()
    p.feed(open(path, encoding="utf-8").read())
    problems = p.problems
    if p.csp is None:
        problems.append("no Content-Security-Policy meta tag")
    else:
        rules = {r.split()[0]: r.split()[1:] for r in p.csp.split(";") if r.strip()}
        if rules.get("default-src") != ["'none'"] or "script-src" in rules:
            problems.append(f"the Content-Security-Policy allows script: {p.csp}")
    # Attribute values count as text too (data-name holds the names).
    text = "".join(p.text)
    for n in needles:
        if n not in text and n.replace("\n", " ") not in text:
            problems.append(f"{n!r} is not on the page as text")
    return problems


def unescaped(line, ch):
    """Positions of ch not preceded by an odd run of backslashes."""
    out = []
    for m in re.finditer(re.escape(ch), line):
        i, k = m.start(), 0
        while i - k - 1 >= 0 and line[i - k - 1] == "\\":
            k += 1
        if k % 2 == 0:
            out.append(m.start())
    return out


def md_plain(line):
    """The text a CommonMark viewer shows for a line of escaped inline text."""
    line = re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", line)
    return line.replace("&lt;", "<").replace("&gt;", ">").replace("&#32;", " ").replace("&amp;", "&")


def check_md(path, needles):
    problems, header_pipes = [], None
    lines = open(path, encoding="utf-8").read().split("\n")
    for no, line in enumerate(lines, 1):
        if "<" in line:
            problems.append(f"line {no}: a raw '<' (HTML in Markdown): {line[:80]!r}")
        # A link, image or link definition needs "](", "][" or "]:" (the
        # program's own "[min, max]" is none of them).
        if any(line[i + 1:i + 2] in ("(", "[", ":") for i in unescaped(line, "]")):
            problems.append(f"line {no}: an unescaped link or image: {line[:80]!r}")
        # The program's own text quotes commands in `...`; data never adds a backtick.
        if len(unescaped(line, "`")) % 2:
            problems.append(f"line {no}: an unbalanced backtick: {line[:80]!r}")
        if line.startswith("|"):
            n = len(unescaped(line, "|"))
            if header_pipes is None:
                header_pipes = n
            elif n != header_pipes:
                problems.append(f"line {no}: {n} cell separators, the table's header has {header_pipes}: {line[:80]!r}")
        else:
            header_pipes = None
        if re.match(r"\s*(#|>|[-+*]\s|\d+[.)](\s|$))", line) and not re.match(r"(#{1,4} |- )", line):
            problems.append(f"line {no}: data starts a block: {line[:80]!r}")
        if re.match(r"- (#|>|[-+*]\s|\d+[.)](\s|$))", line):
            problems.append(f"line {no}: data starts a block inside a list item: {line[:80]!r}")
    plain = "\n".join(md_plain(l) for l in lines)
    for n in needles:
        flat = re.sub(r"[\r\n]", " ", n)
        if flat not in plain:
            problems.append(f"{flat!r} is not in the page as text")
    return problems


def check_csv(path, needles):
    problems = []
    rows = list(csv.reader(open(path, encoding="utf-8", newline="")))
    for i, row in enumerate(rows[1:], 2):
        if len(row) != len(rows[0]):
            problems.append(f"record {i}: {len(row)} fields, the header has {len(rows[0])}")
    cells = {c for row in rows for c in row}
    for n in needles:
        if not any(n in c for c in cells):
            problems.append(f"{n!r} is not a field (or part of one) of {path}")
    return problems


def main():
    kind, path, needles = sys.argv[1], sys.argv[2], sys.argv[3:]
    problems = {"html": check_html, "md": check_md, "csv": check_csv}[kind](path, needles)
    for p in problems:
        print(f"{path}: {p}")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
