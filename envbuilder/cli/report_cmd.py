"""`envbuilder report`: a certificate as a terminal table and a self-contained HTML page;
`--compare A B` puts two side by side."""

from __future__ import annotations

import json
from pathlib import Path

import click

from envbuilder.cli import cli
from envbuilder.errors import UsageError


@cli.command()
@click.argument("certs", nargs=-1, required=True, metavar="CERT_ID_OR_FILE...")
@click.option("--compare", is_flag=True, help="Put two certificates side by side, differences highlighted.")
@click.option(
    "--html",
    "html_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Where to write the HTML page (default: ./envbuilder-report-ID.html).",
)
@click.option("--no-html", is_flag=True, help="Do not write the HTML page.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON instead of a table.")
def report(
    certs: tuple[str, ...], compare: bool, html_path: Path | None, no_html: bool, as_json: bool
) -> None:
    """Report on a certificate (an id or unique prefix from `envbuilder certs list`, or a
    certificate JSON file): stack, verdict, per-step results, CPU vs GPU FP32 vs mixed precision,
    and charts over time of step time, GPU memory, utilization, power, temperature and clock events.

    Exit codes: 0 written; 2 bad arguments or an unknown id; 12 not a certificate, or a tampered
    stored one. A certificate FILE that fails verification is still shown, with the failure in red.
    """
    from envbuilder.certify.store import load_certificate
    from envbuilder.report.html import render_html, write_html
    from envbuilder.report.model import build_report
    from envbuilder.report.terminal import format_terminal

    if compare and len(certs) != 2:
        raise UsageError("--compare needs exactly two certificates", hint="envbuilder report --compare A B")
    if not compare and len(certs) != 1:
        raise UsageError("give one certificate (or --compare A B)", hint="envbuilder report CERT_ID_OR_FILE")
    reports = [build_report(load_certificate(c)) for c in certs]
    for r, arg in zip(reports, certs, strict=True):
        if r.integrity:
            click.echo(f"warning: {arg} failed verification: {'; '.join(r.integrity)}", err=True)
    if compare:
        from envbuilder.report.compare import compare_reports, format_compare, render_compare_html

        a, b = reports
        rows = compare_reports(a, b)
        if as_json:
            doc = {"a": a.to_dict(), "b": b.to_dict(), "fields": [r.to_dict() for r in rows]}
            click.echo(json.dumps(doc, indent=2, sort_keys=True))
        else:
            click.echo(format_compare(a, b, rows), nl=False)
        html = render_compare_html(a, b, rows)
        default = Path(f"envbuilder-compare-{a.id[:12]}-{b.id[:12]}.html")
    else:
        (r,) = reports
        if as_json:
            click.echo(json.dumps(r.to_dict(), indent=2, sort_keys=True))
        else:
            click.echo(format_terminal(r), nl=False)
        html = render_html(r)
        default = Path(f"envbuilder-report-{r.id[:12]}.html")
    if not no_html:
        from envbuilder.atomic import written

        target = html_path or default
        replaced = target.exists()
        click.echo(written(write_html(target, html), replaced), err=True)
