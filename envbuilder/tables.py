"""Text for the terminal: stored text made safe to print (`printable`), and plain-text tables
(left-aligned columns, two spaces apart) that report, `certs`, `matrix list` and `fleet` print
through."""

from __future__ import annotations

from collections.abc import Sequence

_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\x1b": "\\x1b"}


def printable(text: object) -> str:
    """`text` with every character a terminal would act on escaped (Python's escapes: \\n,
    \\x1b, \\u202e): control characters, escape sequences, bidi overrides, line and paragraph
    separators. Every printer of a stored field (an imported certificate's image.ref, a step's
    reason from the image's harness) goes through here, so a field can neither add a row nor
    move the cursor, recolour the terminal or set its title."""
    s = str(text)
    if s.isprintable():
        return s
    return "".join(c if c.isprintable() else _ESCAPES.get(c) or ascii(c)[1:-1] for c in s)


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], indent: str = "  ") -> list[str]:
    """The lines of a table: a header line, then one line per row, trailing blanks stripped.
    Cells are `printable`."""
    headers = [printable(h) for h in headers]
    rows = [[printable(c) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = [indent + "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    return line + [
        indent + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows
    ]
