"""What users run: the installed console script ``distgate``, each case a process of its
own (with the process-level workarounds of distgate/_runtime.py that in-process tests never
set). Every command with each engine it takes (arrow, duckdb, and dask on the session's
local cluster), every input form (CSV, gzip CSV, TSV, Parquet, Excel, standard input), and
each extra missing. Each case checks the exit code and a figure of the output: the sample
data's reference figures (docs/), the same whichever engine counted.

The Dask cases share the xdist group "dask" with tests/test_engines.py: one pytest-xdist
worker runs them one after another on one cluster (tests/conftest.py)."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.conftest import SAMPLE
from tests.serve_helpers import TOKENS, sample_keys, write_tokens

SCRIPT = Path(sys.executable).with_name("distgate")  # the console script of this install
ENGINES = ("arrow", "duckdb", "dask")
# the sample table's figures, with its distgate.toml (age in bands, kld at alpha 0.2)
RECORDS = 10_000
L2_KLD = 0.358836  # D(y) of L2, the location that stands out (docs/index.md)
MUTUAL_INFORMATION = 0.063285  # I (docs/baseline.md)
REPLAY_RELEASED = 7411  # of the 10,000 records requested (docs/replay.md)
SERVE_RELEASED = 188  # of the log's first 200 requests, released by the end of them (replay's too)
PLAIN = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}


def engine_marks(engine: str) -> list:
    return [pytest.mark.xdist_group("dask"), pytest.mark.slow] if engine == "dask" else []


def by_engine(*engines: str) -> list:
    return [pytest.param(e, id=e, marks=engine_marks(e)) for e in engines]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """The sample data (its distgate.toml included) in every input form, and a state
    file of the sample replay (for state verify)."""
    import openpyxl
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    here = tmp_path_factory.mktemp("console")
    for name in ("soldiers.csv", "requests.csv", "distgate.toml", "published_counts.csv"):
        shutil.copy(SAMPLE / name, here / name)
    text = (here / "soldiers.csv").read_bytes()
    (here / "soldiers.csv.gz").write_bytes(gzip.compress(text))
    (here / "soldiers.tsv").write_bytes(text.replace(b",", b"\t"))
    table = pacsv.read_csv(here / "soldiers.csv")
    pq.write_table(table, here / "soldiers.parquet")
    book = openpyxl.Workbook(write_only=True)
    sheet = book.create_sheet()
    sheet.append(table.column_names)
    for row in zip(*(table.column(c).to_pylist() for c in table.column_names), strict=True):
        sheet.append(list(row))
    book.save(here / "soldiers.xlsx")
    made = distgate(here, "replay", "soldiers.csv", "requests.csv", "--state", "gate.db", "-q")
    assert made.returncode == 0, made.stderr
    return here


def distgate(
    cwd: Path,
    *args: str,
    engine: str | None = None,
    scheduler: str | None = None,
    input: bytes | None = None,
    env: dict | None = None,
) -> subprocess.CompletedProcess:
    """Run the console script with ``args`` (and --engine, --scheduler) in ``cwd``."""
    command = [str(SCRIPT), *args]
    if engine:
        command += ["--engine", engine]
    if scheduler and engine == "dask":
        command += ["--scheduler", scheduler]
    return subprocess.run(
        command,
        cwd=cwd,
        input=input,
        capture_output=True,
        env={**PLAIN, **(env or {})},
        timeout=300,
    )


def document(ran: subprocess.CompletedProcess, code: int = 0) -> dict:
    assert ran.returncode == code, ran.stderr.decode()[-2000:]
    return json.loads(ran.stdout)


def on(request, engine: str) -> dict:
    """The keywords of :func:`distgate` that choose ``engine`` (for dask, the session's
    cluster: tests/conftest.py)."""
    if engine != "dask":
        return {"engine": engine}
    return {"engine": engine, "scheduler": request.getfixturevalue("dask_cluster").address}


FORMS = ("soldiers.csv", "soldiers.csv.gz", "soldiers.tsv", "soldiers.parquet", "-")


@pytest.mark.parametrize("engine", by_engine(*ENGINES))
@pytest.mark.parametrize("form", FORMS, ids=["csv", "csv.gz", "tsv", "parquet", "stdin"])
def test_assess_reads_every_form_with_every_engine(request, folder, engine, form):
    stdin = (folder / "soldiers.csv").read_bytes() if form == "-" else None
    ran = distgate(folder, "assess", form, "--json", input=stdin, **on(request, engine))
    found = document(ran, code=1)  # the sample is unsafe to release whole
    assert found["engine"] == engine and found["released"] == RECORDS
    l2 = next(t for t in found["metrics"][0]["targets"] if t["target"] == "L2")
    assert (l2["count"], round(l2["statistic"], 6)) == (1299, L2_KLD)


def test_an_excel_workbook_is_read_by_arrow_and_refused_by_the_other_engines(folder):
    found = document(distgate(folder, "assess", "soldiers.xlsx", "--json"), code=1)
    l2 = next(t for t in found["metrics"][0]["targets"] if t["target"] == "L2")
    assert (found["released"], round(l2["statistic"], 6)) == (RECORDS, L2_KLD)
    for engine in ("duckdb", "dask"):  # refused before any cluster is reached
        ran = distgate(folder, "assess", "soldiers.xlsx", engine=engine)
        assert ran.returncode == 2
        assert ran.stderr.decode() == (
            "distgate: The duckdb and dask engines read CSV, TSV and Parquet; the Excel "
            "workbook 'soldiers.xlsx' is read by --engine arrow (or save it as CSV).\n"
        )


@pytest.mark.parametrize("engine", by_engine(*ENGINES))
def test_baseline(request, folder, engine):
    ran = distgate(folder, "baseline", "soldiers.csv", "--json", **on(request, engine))
    found = document(ran)
    assert round(found["mutual_information"], 6) == MUTUAL_INFORMATION
    assert found["outliers"] == ["L2"] and found["engine"] == engine


@pytest.mark.parametrize("engine", by_engine(*ENGINES))
def test_audit_counts_the_records(request, folder, engine):
    args = ("audit", "soldiers.csv", "-x", "age", "-y", "location", "--json")
    found = document(distgate(folder, *args, **on(request, engine)))
    assert len(found["cells"]) == 50 and sum(c["value"] for c in found["cells"]) == RECORDS
    assert found["safe"] is True


@pytest.mark.parametrize("engine", by_engine(*ENGINES))
def test_replay(request, folder, engine):
    args = ("replay", "soldiers.csv", "requests.csv", "--json")
    found = document(distgate(folder, *args, **on(request, engine)))
    assert found["records"]["released"] == REPLAY_RELEASED
    assert found["requests"] == 10_040 and found["engine"] == engine


@pytest.mark.parametrize("engine", by_engine(*ENGINES))
def test_simulate(request, folder, engine):
    args = ("simulate", "soldiers.csv", "-m", "kld", "-a", "0.2", "--sequences", "2")
    found = document(distgate(folder, *args, "--requests", "1000", "--json", **on(request, engine)))
    assert found["total"] == [
        {"metric": "kld", "alpha": 0.2, "mean_released": 883.5, "percent": 88.35}
    ]


@pytest.mark.parametrize("engine", by_engine(*ENGINES))
def test_calibrate(request, folder, engine):
    args = ("calibrate", "soldiers.csv", "-m", "kld", "--sizes", "20", "--releases", "200")
    found = document(distgate(folder, *args, "--json", **on(request, engine)))
    levels = {(lv["alpha"], lv["size"]): lv["type_i_error"] for lv in found["levels"]}
    assert levels == {(0.05, 20): 0.055, (0.2, 20): 0.19}


@pytest.mark.parametrize("engine", by_engine(*ENGINES))
def test_state_verify(request, folder, engine):
    args = ("state", "verify", "gate.db", "soldiers.csv", "--json")
    found = document(distgate(folder, *args, **on(request, engine)))
    assert found["verified"] is True
    checks = {c["check"]: c["detail"] for c in found["checks"]}
    assert checks["batches"] == "1 batch holds requests 0 to 10,039, as the request counter says"
    assert checks["keys"] == "the 10,040 requests' keys are those of their records"


def test_state_verify_finds_a_key_moved_to_another_record_with_duckdb(folder, tmp_path):
    """Two records of one target and one value trade keys: the counts and codes are the
    same, the keys are not (duckdb finds each key's record itself)."""
    lines = (folder / "soldiers.csv").read_text().splitlines(keepends=True)
    rows = [line.split(",", 1) for line in lines]  # (key, the rest)
    seen: dict[str, int] = {}
    for second, (_, rest) in enumerate(rows[1:], start=1):
        first = seen.setdefault(rest.split(",", 1)[1], second)  # the same age and location
        if first != second:
            break
    rows[first][0], rows[second][0] = rows[second][0], rows[first][0]
    (tmp_path / "moved.csv").write_text("".join(",".join(row) for row in rows))
    for name in ("distgate.toml", "gate.db"):
        shutil.copy(folder / name, tmp_path / name)
    ran = distgate(tmp_path, "state", "verify", "gate.db", "moved.csv", "--json", engine="duckdb")
    found = document(ran, code=1)
    keys = next(c for c in found["checks"] if c["check"] == "keys")
    assert keys["status"] == "FAILED"
    a, b = rows[first][0], rows[second][0]  # the keys as the state has them: b on line first
    record_a, record_b = second - 1, first - 1  # (the header is line 0)
    assert keys["detail"].endswith(
        f"for the key '{b}', its record {record_b}, but the key is record {record_a}'s "
        "in this table."
    ) or keys["detail"].endswith(
        f"for the key '{a}', its record {record_a}, but the key is record {record_b}'s "
        "in this table."
    )


@pytest.mark.slow
@pytest.mark.parametrize("engine", by_engine(*ENGINES))
def test_serve(request, folder, engine, tmp_path):
    """The server starts, decides the first 200 requests of the log and stops on SIGTERM
    with exit code 0."""
    command = [str(SCRIPT), "serve", str(folder / "soldiers.csv"), "--port", "0"]
    command += ["--state", str(tmp_path / "s.db"), *write_tokens(tmp_path)]
    for name, value in on(request, engine).items():
        command += [f"--{name}", value]
    tokens = ("DISTGATE_OPERATOR_TOKEN", "DISTGATE_REQUESTER_TOKENS")  # the files' only
    env = {k: v for k, v in PLAIN.items() if k not in tokens}
    server = subprocess.Popen(command, cwd=folder, env=env, stderr=subprocess.PIPE, text=True)
    try:
        url = None
        for line in server.stderr:
            if line.startswith("listening on "):
                url = line.split()[-1]
                break
        assert url, "the server did not start"
        answer = httpx.post(
            f"{url}/v1/requests",
            json={"requests": [{"key": k} for k in sample_keys()[:200]]},
            headers={"Authorization": f"Bearer {TOKENS['alice']}"},
            timeout=120,
        )
        assert answer.status_code == 200, answer.text
        decisions = [d["decision"] for d in answer.json()["decisions"]]
        assert (len(decisions), decisions.count("released")) == (200, SERVE_RELEASED)
    finally:
        server.terminate()
        code = server.wait(timeout=60)
        server.stderr.close()
    assert code == 0


def test_randomize_takes_no_engine_and_reads_stdin(folder, tmp_path):
    out = tmp_path / "r.csv"
    args = ("--qi", "age", "--sensitive", "location", "--tau", "0.5", "-o", str(out), "--json")
    fed = (folder / "soldiers.csv").read_bytes()
    found = document(distgate(folder, "randomize", "-", *args, input=fed))
    assert round(found["p"]["age"], 6) == 0.942026 and found["feasible"] is True
    assert out.read_text().count("\n") == RECORDS + 1


@pytest.mark.parametrize(
    "args",
    [
        ("baseline", "-", "--json"),
        ("replay", "soldiers.csv", "-", "--json"),
        ("audit", "-", "-x", "age", "-y", "location", "--json"),
        (
            "simulate",
            "-",
            "-m",
            "kld",
            "-a",
            "0.2",
            "--sequences",
            "2",
            "--requests",
            "1000",
            "--json",
        ),
    ],  # fmt: skip
    ids=lambda args: args[0],
)
def test_every_command_reads_standard_input(folder, args):
    fed = folder / ("requests.csv" if args[0] == "replay" else "soldiers.csv")
    found = document(distgate(folder, *args, input=fed.read_bytes()))
    figure = {
        "baseline": lambda d: round(d["mutual_information"], 6),
        "replay": lambda d: d["records"]["released"],
        "audit": lambda d: sum(c["value"] for c in d["cells"]),
        "simulate": lambda d: d["total"][0]["mean_released"],
    }[args[0]](found)
    assert (
        figure
        == {
            "baseline": MUTUAL_INFORMATION,
            "replay": REPLAY_RELEASED,
            "audit": RECORDS,
            "simulate": 883.5,
        }[args[0]]
    )


# An extra left out: its packages made unimportable in the console script's process by a
# sitecustomize module on PYTHONPATH (a finder that refuses them), as if never installed.
HIDE = """
import sys

HIDDEN = {hidden!r}


class Missing:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name.split(".")[0] in HIDDEN:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)


sys.meta_path.insert(0, Missing)
"""
EXTRAS = [
    ("plots", ("matplotlib",), ("replay", "soldiers.csv", "requests.csv", "--plot", "r.png"),
     "replay --plot needs its extra packages (matplotlib is missing)"),
    ("engines", ("duckdb",), ("assess", "soldiers.csv", "--engine", "duckdb"),
     "The duckdb engine needs its extra packages (duckdb is missing)"),
    ("excel", ("openpyxl",), ("assess", "soldiers.xlsx"),
     "needs its extra packages (openpyxl is missing)"),
    ("cluster", ("dask", "distributed"), ("assess", "soldiers.csv", "--engine", "dask"),
     "The dask engine needs its extra packages (distributed is missing)"),
    ("serve", ("starlette", "uvicorn"), ("serve", "soldiers.csv", "--state", "s.db"),
     "needs its extra packages (starlette is missing)"),
]  # fmt: skip


@pytest.mark.parametrize("extra, hidden, args, words", EXTRAS, ids=[e[0] for e in EXTRAS])
def test_a_missing_extra_names_its_pip_install(folder, tmp_path, extra, hidden, args, words):
    (tmp_path / "sitecustomize.py").write_text(HIDE.format(hidden=set(hidden)))
    before = set(os.listdir(folder))
    ran = distgate(folder, *args, env={"PYTHONPATH": str(tmp_path)})
    message = ran.stderr.decode()
    assert ran.returncode == 2, message
    assert message.startswith("distgate: ") and message.count("\n") == 1, message
    assert words in message and f"pip install 'distgate[{extra}]'" in message, message
    assert set(os.listdir(folder)) == before  # refused before any output
