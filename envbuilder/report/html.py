"""A report as one self-contained HTML page (inline CSS, inline SVG charts, no network): every
string from the certificate is escaped by Jinja's autoescape."""

from __future__ import annotations

from pathlib import Path

import jinja2
from markupsafe import Markup

from envbuilder import __version__
from envbuilder.atomic import write_text_atomic
from envbuilder.errors import UsageError
from envbuilder.report.model import Report
from envbuilder.report.multigpu import RANK_HEADERS, TABLE_HEADERS, busbw_chart, rank_rows, table_rows
from envbuilder.report.terminal import COMPARISON_HEADERS, comparison_cells, fmt
from envbuilder.report.timeline import charts
from envbuilder.resources import templates_dir
from envbuilder.tables import printable


def _printable_output(value: object) -> object:
    """What every `{{ }}` of the page prints: a string made printable (tables.printable, as the
    terminal report does) before autoescape, so a control character or a bidi override in a stored
    field shows as its escape (`\\u202e`) instead of reordering or hiding the text around it.
    Markup (the charts, made and escaped by charts.py) passes as it is."""
    return printable(value) if isinstance(value, str) and not isinstance(value, Markup) else value


def jinja_env() -> jinja2.Environment:
    """The HTML environment: autoescape on, every printed string printable, StrictUndefined (a
    missing field is a bug)."""
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        autoescape=True,
        finalize=_printable_output,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render_html(r: Report) -> str:
    """The single-certificate HTML page. Every string from the certificate is escaped."""
    return (
        jinja_env()
        .get_template("report.html.j2")
        .render(
            mode="single",
            r=r,
            charts=[Markup(c) for c in charts(r)],
            busbw_chart=Markup(busbw_chart(r.multi_gpu) or "") if r.multi_gpu else "",
            mg_headers=TABLE_HEADERS,
            mg_rows=table_rows(r.multi_gpu) if r.multi_gpu else [],
            mg_rank_headers=RANK_HEADERS,
            mg_rank_rows=rank_rows(r.multi_gpu) if r.multi_gpu else [],
            comparison_headers=COMPARISON_HEADERS,
            comparison_cells=comparison_cells,
            fmt=fmt,
            version=__version__,
        )
    )


def write_html(path: Path, html: str) -> Path:
    """Write atomically. Raises UsageError when the folder cannot be written."""
    try:
        write_text_atomic(path, html)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from exc
    return path
