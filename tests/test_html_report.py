"""--report FILE.html checked in a real headless browser (Chromium): the page the browser
renders holds every table of the csv files (--csv-dir) with the JSON's numbers, the
verdict, the exit code and the plots, and prints to PDF. The browser is a set-up step of
its own (``make browser``, which ``make test`` runs); without one the browser tests are
skipped, or fail under DISTGATE_REQUIRE_BROWSER=1 (CI)."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.cli_helpers import run
from tests.conftest import SAMPLE

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome")


@pytest.fixture(scope="session")
def browser() -> str:
    path = next((p for p in map(shutil.which, BROWSERS) if p), None)
    if path is None:
        message = "no headless browser (Chromium): `make browser` installs it where it can"
        if os.environ.get("DISTGATE_REQUIRE_BROWSER") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return path


def headless(browser: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", *args],
        capture_output=True,
        timeout=120,
        check=True,
    )


class Tables(HTMLParser):
    """Every <table> of a page as (caption, header, rows of cell texts); images' sources."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[dict] = []
        self.images: list[str] = []
        self._text: list[str] | None = None
        self._row: list[str] | None = None
        self.ids: dict[str, str] = {}
        self._id: str | None = None  # the element with an id whose text is being read
        self._id_tag = ""
        self._depth = 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table":
            self.tables.append({"caption": attrs.get("data-title", ""), "header": [], "rows": []})
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._text = []
        elif tag == "img":
            self.images.append(attrs.get("src", ""))
        if self._id is not None and tag == self._id_tag:
            self._depth += 1
        if "id" in attrs:
            self._id, self.ids[attrs["id"]] = attrs["id"], ""
            self._id_tag, self._depth = tag, 1

    def handle_data(self, data):
        if self._text is not None:
            self._text.append(data)
        if self._id is not None:
            self.ids[self._id] += data

    def handle_endtag(self, tag):
        if self._id is not None and tag == self._id_tag:
            self._depth -= 1
            if self._depth == 0:
                self._id = None
        if tag in ("td", "th") and self._text is not None and self._row is not None:
            self._row.append("".join(self._text).strip())
            self._text = None
        elif tag == "tr" and self._row is not None:
            table = self.tables[-1]
            if not table["header"]:
                table["header"] = self._row
            else:
                table["rows"].append(self._row)
            self._row = None


def csv_tables(folder: Path, command: str) -> list[tuple[list[str], int]]:
    """(header, number of rows) of every csv file --csv-dir wrote for the report's tables
    (the one table of results, COMMAND.csv, aside), sorted."""
    found = []
    for path in folder.glob("*.csv"):
        if path.name != f"{command}.csv":
            header, *rows = csv.reader(io.StringIO(path.read_text()))
            found.append((header, len(rows)))
    return sorted(found)


def html_tables(tables: list[dict]) -> list[tuple[list[str], int]]:
    """(header, number of rows) of the page's titled tables (the report's), sorted."""
    return sorted((t["header"], len(t["rows"])) for t in tables if t["caption"])


def rendered(browser: str, page: Path) -> Tables:
    dom = headless(browser, "--dump-dom", page.as_uri()).stdout.decode()
    parser = Tables()
    parser.feed(dom)
    return parser


@pytest.mark.slow
def test_assess_report_in_a_browser_has_every_table_and_the_json_numbers(browser, tmp_path):
    page = tmp_path / "assess.html"
    args = ["assess", str(SAMPLE / "soldiers.csv"), "--config", str(SAMPLE / "distgate.toml")]
    args += ["--metric", "kld,mis,cst", "--alpha", "0.05"]
    shown = run(*args, "--report", str(page))
    document = json.loads(run(*args, "--json").stdout)
    assert run(*args, "--csv-dir", str(tmp_path / "csv")).exit_code == 1
    assert shown.exit_code == 1

    dom = rendered(browser, page)
    # every table of the csv files
    assert html_tables(dom.tables) == csv_tables(tmp_path / "csv", "assess")
    assert dom.ids["exit-code"].strip() == "1"
    assert dom.ids["verdict"].startswith("UNSAFE: releasing 10000 records")
    by_caption = {t["caption"]: t for t in dom.tables}
    for metric in document["metrics"]:
        table = next(t for c, t in by_caption.items() if c.startswith(metric["metric"] + " "))
        column = table["header"].index("D(y)" if metric["metric"] == "mis" else "statistic")
        for row, target in zip(table["rows"], metric["targets"], strict=True):
            assert row[0] == target["target"]
            assert int(row[1]) == target["count"]
            assert float(row[column]) == pytest.approx(target["statistic"], abs=5e-7)
            if "critical" in table["header"]:
                critical = float(row[table["header"].index("critical")])
                assert critical == pytest.approx(target["critical"], abs=5e-7)
                assert row[-1] == ("safe" if target["safe"] else "BLOCKED")
    # the inputs' fingerprints: the table's SHA-256 as sha256sum prints it
    digest = subprocess.run(
        ["sha256sum", str(SAMPLE / "soldiers.csv")], capture_output=True, text=True
    ).stdout.split()[0]
    assert digest in page.read_text()

    shot = tmp_path / "assess.png"
    headless(browser, f"--screenshot={shot}", "--window-size=1000,1300", page.as_uri())
    assert shot.read_bytes()[:4] == b"\x89PNG" and shot.stat().st_size > 20_000
    pdf = tmp_path / "assess.pdf"
    headless(browser, f"--print-to-pdf={pdf}", "--no-pdf-header-footer", page.as_uri())
    assert pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 10_000


@pytest.mark.slow
def test_replay_report_embeds_its_plot_and_summary(browser, tmp_path):
    log = tmp_path / "requests.csv"
    lines = (SAMPLE / "requests.csv").read_text().splitlines()
    log.write_text("\n".join(lines[:1500]) + "\n")
    page = tmp_path / "replay.html"
    args = ["replay", str(SAMPLE / "soldiers.csv"), str(log)]
    args += ["--config", str(SAMPLE / "distgate.toml")]
    assert run(*args, "--report", str(page)).exit_code == 0
    document = json.loads(run(*args, "--json").stdout)

    dom = rendered(browser, page)
    summary = next(t for t in dom.tables if t["caption"].startswith("replay: kld"))
    for row, target in zip(summary["rows"], document["targets"], strict=True):
        assert row[0] == target["target"]
        assert int(row[1]) == target["requested"]
        assert float(row[5]) == pytest.approx(target["percent_released"], abs=0.05)
    assert len(dom.images) == 1 and dom.images[0].startswith("data:image/png;base64,")
    assert "http" not in page.read_text().replace("http-equiv", "")  # nothing fetched


COMMANDS = {
    "baseline": ["baseline", "soldiers.csv"],
    "assess": ["assess", "soldiers.csv", "--metric", "kld,dqt"],
    "audit": ["audit", "published_counts.csv", "--fix"],
    "randomize": ["randomize", "patients.csv", "--qi", "gender,age", "--sensitive", "disease"]
    + ["--tau", "0.6", "--top", "5"],
    "replay": ["replay", "soldiers.csv", "REQUESTS"],
    "simulate": ["simulate", "soldiers.csv", "--metric", "kld", "--alpha", "0.2"]
    + ["--sequences", "2", "--requests", "2000", "--draws", "200"],
    "calibrate": ["calibrate", "soldiers.csv", "--metric", "kld", "--sizes", "20,200"]
    + ["--releases", "500", "--draws", "500"],
}
PLOTS = {
    "baseline": 1,
    "assess": 0,
    "audit": 0,
    "randomize": 0,
    "replay": 1,
    "simulate": 2,
    "calibrate": 1,
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_reports_every_table_of_its_csv_files(command, tmp_path, monkeypatch):
    """The HTML file as written (no browser needed): each csv file of --csv-dir but the
    table of results is a table of the page with the same header and number of rows, the
    plots are embedded, the exit code is shown."""
    monkeypatch.chdir(SAMPLE)
    log = tmp_path / "requests.csv"
    log.write_text("\n".join((SAMPLE / "requests.csv").read_text().splitlines()[:300]) + "\n")
    args = [str(log) if a == "REQUESTS" else a for a in COMMANDS[command]]
    page = tmp_path / "report.html"
    folder = tmp_path / "csv"
    written = run(*args, "--report", str(page), "--csv-dir", str(folder), "--format", "csv")
    assert written.exit_code in (0, 1), written.output
    assert (folder / f"{command}.csv").read_text() == written.stdout  # the table of results
    parser = Tables()
    parser.feed(page.read_text())
    assert html_tables(parser.tables) == csv_tables(folder, command)
    assert len(html_tables(parser.tables)) == len(list(folder.glob("*.csv"))) - 1
    assert parser.ids["exit-code"] == str(written.exit_code)
    assert len(parser.images) == PLOTS[command]
    assert all(src.startswith("data:image/png;base64,") for src in parser.images)
