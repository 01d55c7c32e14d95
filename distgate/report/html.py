"""A report as one self-contained HTML file: inline CSS, plots as PNG data URIs, the
inputs' fingerprints, the options, every table, the verdict and the exit code. Every text is
shown through :func:`escape` (markup and control characters escaped). Nothing is
fetched from elsewhere, and the page prints to PDF from a browser (tables are not split
across pages where avoidable, plots fit the page width)."""

from __future__ import annotations

import base64
import hashlib
import io
import os
from datetime import UTC, datetime
from html import escape as _markup_escape

from distgate.report.labels import shown
from distgate.report.model import Plot, Report, Table, Text

CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
       color: #1b1b1b; max-width: 62rem; margin: 1.5rem auto; padding: 0 1rem; }
h1 { font-size: 1.5rem; margin: 0 0 .3rem; }
h2 { font-size: 1.1rem; margin: 1.6rem 0 .4rem; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: .3rem 0 1rem; font-variant-numeric: tabular-nums;
        break-inside: auto; }
h3.title { font-size: .95rem; margin: 1rem 0 .2rem; break-after: avoid; }
th, td { border: 1px solid #c8c8c8; padding: .15rem .5rem; vertical-align: top; }
th { background: #f0f0f0; text-align: left; }
td.n, th.n { text-align: right; }
tr { break-inside: avoid; }
.safe { color: #116b2b; font-weight: 600; }
.blocked { color: #b00020; font-weight: 700; }
.warn { color: #b00020; }
.dim { color: #777; }
.strong { font-weight: 700; }
.verdict { font-size: 1.15rem; padding: .5rem .8rem; border-left: .35rem solid #888;
           background: #f6f6f6; margin: .8rem 0; }
.verdict.is-safe { border-color: #116b2b; }
.verdict.is-unsafe { border-color: #b00020; }
.meta td { border: none; padding: .05rem .8rem .05rem 0; }
.meta code { font-size: .85rem; word-break: break-all; }
figure { margin: .5rem 0 1.2rem; break-inside: avoid; }
figure img { max-width: 100%; height: auto; border: 1px solid #ddd; }
p.line { margin: .2rem 0; white-space: pre-wrap; }
.caption { color: #555; font-size: .9rem; }
@media print { body { max-width: none; margin: 0; font-size: 11px; }
               h2 { break-after: avoid; } }
"""


def escape(text: str) -> str:
    """Text for the page: markup escaped, and control characters shown escaped
    (:func:`distgate.report.labels.shown`: a right-to-left override would reverse the
    cell in every browser)."""
    return _markup_escape(shown(text))


def fingerprint(path: str) -> dict:
    """Name, size and SHA-256 of an input file (standard input and pipes cannot be read
    again)."""
    if path == "-":
        return {"file": "standard input", "bytes": None, "sha256": None}
    if not os.path.isfile(path):  # a named pipe was read once, as a stream: not again
        return {"file": path, "bytes": None, "sha256": None}
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return {"file": path, "bytes": os.path.getsize(path), "sha256": digest.hexdigest()}


def _spans(line: Text) -> str:
    out = []
    for text, style in line.parts:
        out.append(f'<span class="{style}">{escape(text)}</span>' if style else escape(text))
    return "".join(out)


def _table(table: Table) -> str:
    keep = [j for j, c in enumerate(table.columns) if not c.decorative]
    # the title as a heading of its own: a <caption> wraps to the table's width
    rows = [
        f'<h3 class="title">{escape(table.title)}</h3>',
        f'<table data-title="{escape(table.title)}">',
        "<thead><tr>",
    ]
    for j in keep:
        column = table.columns[j]
        rows.append(f"<th{' class=n' if column.numeric else ''}>{escape(column.name)}</th>")
    rows.append("</tr></thead><tbody>")
    for row in table.rows:
        cells = []
        for j in keep:
            cell = row[j]
            classes = " ".join(
                c for c in ("n" if table.columns[j].numeric else "", cell.style or "") if c
            )
            cells.append(
                f"<td{f' class={chr(34)}{classes}{chr(34)}' if classes else ''}>"
                f"{escape(cell.text)}</td>"
            )
        rows.append("<tr>" + "".join(cells) + "</tr>")
    rows.append("</tbody></table>")
    if table.caption:
        rows.append(f'<p class="caption">{escape(table.caption)}</p>')
    return "\n".join(rows)


def _plot(plot: Plot) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure = plot.draw()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110)
    plt.close(figure)
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    where = f" (also written to {escape(plot.path)})" if plot.path else ""
    return (
        f'<figure><img alt="{escape(plot.title)}" src="data:image/png;base64,{data}">'
        f"<figcaption>{escape(plot.title)}{where}</figcaption></figure>"
    )


def _option_text(value) -> str:
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return str(value)


def to_html(report: Report) -> str:
    from distgate._version import __version__

    title = f"distgate {report.command}"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
    ]
    if report.verdict is not None:
        state = {True: " is-safe", False: " is-unsafe", None: ""}[report.safe]
        parts.append(f'<div class="verdict{state}" id="verdict">{_spans(report.verdict)}</div>')
    parts.append('<table class="meta"><tbody>')
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    meaning = {0: "(safe)" if report.safe else "(done)", 1: "(unsafe)"}.get(report.exit_code, "")
    parts.append(
        f"<tr><td>exit code</td><td><span id=exit-code>{report.exit_code}</span> "
        f"{escape(meaning)}</td></tr>"
    )
    parts.append(f"<tr><td>written</td><td>{when} by distgate {escape(__version__)}</td></tr>")
    parts.append("</tbody></table>")

    parts.append("<h2>Inputs</h2>")
    parts.append(
        '<table class="inputs"><thead><tr><th>file</th><th class=n>bytes</th>'
        "<th>SHA-256</th></tr></thead><tbody>"
    )
    for path in report.inputs:
        f = fingerprint(path)
        size = "" if f["bytes"] is None else f"{f['bytes']:,}"
        parts.append(
            f"<tr><td>{escape(f['file'])}</td><td class=n>{size}</td>"
            f"<td><code>{f['sha256'] or 'not re-readable'}</code></td></tr>"
        )
    parts.append("</tbody></table>")
    parts.append("<h2>Options</h2>")
    parts.append('<table class="options"><tbody>')
    for name, value in report.options.items():
        parts.append(
            f"<tr><td>{escape(name)}</td><td><code>{escape(_option_text(value))}</code></td></tr>"
        )
    parts.append("</tbody></table>")

    parts.append("<h2>Results</h2>")
    for block in report.blocks:
        if isinstance(block, Table):
            parts.append(_table(block))
        elif isinstance(block, Text):
            parts.append(f'<p class="line">{_spans(block)}</p>')
        elif isinstance(block, Plot):
            parts.append(_plot(block))
    parts.append("</body></html>\n")
    return "\n".join(parts)


def write_html(report: Report, path: str) -> None:
    """Write the report atomically (no half-written file on failure)."""
    from distgate.data.atomic import atomic_text

    page = to_html(report)
    with atomic_text(path) as handle:
        handle.write(page)
