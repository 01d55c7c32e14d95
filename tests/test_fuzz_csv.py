"""Hypothesis-generated CSV bytes (random quoting, encodings, line endings, ragged rows,
blanks, stray bytes) never make a command crash: exit 0, 1 or 2, and a refusal is one
sentence without a traceback."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.cli_helpers import run

cells = st.one_of(
    st.sampled_from(["20", "31", "L1", "L2", "", " ", "x", "-5", "1e3", "nan", "NA"]),
    st.text(min_size=0, max_size=6),
)


@st.composite
def csv_bytes(draw):
    header = draw(
        st.sampled_from(
            [["id", "age", "location"], ["age", "location"], ["age"], ["id", "age", "age"], []]
        )
    )
    newline = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    rows = draw(st.lists(st.lists(cells, min_size=0, max_size=4), min_size=0, max_size=8))
    quote = draw(st.booleans())

    def line(values):
        if quote:
            return ",".join('"' + v.replace('"', '""') + '"' for v in values)
        return ",".join(values)

    text = newline.join([line(header)] + [line(r) for r in rows]) + draw(
        st.sampled_from(["", newline])
    )
    encoding = draw(st.sampled_from(["utf-8", "utf-16", "latin-1"]))
    data = text.encode(encoding, errors="replace")
    if draw(st.booleans()):
        position = draw(st.integers(0, len(data)))
        data = data[:position] + draw(st.binary(max_size=4)) + data[position:]
    return data


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(csv_bytes(), st.sampled_from(["assess", "baseline"]))
def test_arbitrary_csv_bytes_never_crash(data, command):
    args = [command, "-", "-x", "age", "-y", "location"]
    if command == "assess":
        args += ["--metric", "kld", "--critical", "asymptotic"]
    result = run(*args, input=data)  # (a crash raises here)
    assert "Traceback" not in result.output
    assert result.exit_code in (0, 1, 2), result.output
    if result.exit_code == 2:
        message = result.stderr.strip()
        assert message.startswith("distgate: ") and len(message.splitlines()) == 1, message
