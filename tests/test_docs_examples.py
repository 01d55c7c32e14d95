"""The console examples of the documentation are run and their output compared.

Every ```console block of ``docs/*.md`` and ``README.md`` is a shell session started in a
fresh copy of ``sample_data/`` (``cd ..`` leads to a folder holding only that copy, as the
top of a checkout would, without its ``distgate.toml``). A line ``$ COMMAND`` (continued by
a trailing backslash) is run and the lines up to the next ``$`` line are the output it must
print: standard output and standard error together, in order, as a terminal shows them.
Commands understood:

- ``distgate ARGS``, optionally piped into ``head -n N`` or ``tail -n N``: run in this
  process through :func:`distgate.cli.run` with a terminal width of 80 columns;
- ``echo $?``: the exit code of the last ``distgate`` command (not allowed after a pipe,
  where a shell would print the exit code of the pipe's last command);
- ``cd DIR``, ``cat FILE``, ``head -n N FILE``: what the shell does.

A ``distgate`` command that exits with a code other than 0 must be followed by
``$ echo $?`` (unless its output is piped, as a shell would not show it either). Anything
else in a console block fails the test, so that no example in the documentation goes
unchecked. Only trailing spaces are normalised.

Blocks that run ``replay`` or ``simulate`` (or, in Python, ``distgate.gate``, its state
or its workflows) load the compiled gate (compiled once per machine, cached afterwards)
and are marked slow.

Every ```python block of the pages is run too, in its own namespace, from a fresh copy of
``sample_data/``, and must be followed directly (after one blank line) by a ```text block
of what it prints: an example that printed nothing to compare would pass whatever it did.

Every command the pages show outside those blocks is checked too: an inline code span that
starts with ``distgate`` or a command name (``assess -m kanon,ldiv,tclose``, ``distgate
replay --state gate.db``) and each ``distgate`` line of a ```sh block. A span that names a
command alone is checked to name one; a synopsis (a placeholder such as ``FILE``, ``...``,
``[TABLE]``, or a flag without its value: ``replay --state``) to name options the command
has; a command that runs a server or reaches a scheduler to parse; any other is run from a
fresh copy of ``sample_data/`` (given the sample's files when it names none: ``assess
--fix`` runs ``assess soldiers.csv --fix``) and must not end with exit code 2.

After a deliberate change of output, ``python tests/test_docs_examples.py --update``
rewrites the expected output of every block in place, or of the pages named after it
(then read the diff).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import shutil
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from unittest import mock

import pytest

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
SAMPLE = REPO / "sample_data"
COLUMNS = "80"
BLOCK = re.compile(r"^```console\n(.*?)^```$", re.S | re.M)
PYTHON = re.compile(r"^```python\n(.*?)^```\n(?:\n```text\n(.*?)^```$)?", re.S | re.M)
SLOW_COMMANDS = ("replay", "simulate")


@dataclass
class Step:
    command: str
    expected: list[str] = field(default_factory=list)


@dataclass
class Example:
    page: str
    line: int
    steps: list[Step]
    start: int  # offsets of the block's body in the page's text
    end: int

    @property
    def name(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def slow(self) -> bool:
        return any(
            word in SLOW_COMMANDS
            for step in self.steps
            if step.command.startswith("distgate ")
            for word in step.command.split()[1:2]
        )


def parse_steps(body: str) -> list[Step]:
    steps: list[Step] = []
    lines = body.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.startswith("$ "):
            if not steps:
                raise ValueError(f"output before the first command: {line!r}")
            steps[-1].expected.append(line)
            i += 1
            continue
        command = line[2:]
        while command.endswith("\\"):
            i += 1
            command = command[:-1].rstrip() + " " + lines[i].strip()
        steps.append(Step(command))
        i += 1
    return steps


def pages() -> list[Path]:
    return [*sorted(DOCS.glob("*.md")), REPO / "README.md"]


def examples() -> list[Example]:
    found = []
    for path in pages():
        text = path.read_text()
        page = str(path.relative_to(REPO))
        for match in BLOCK.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            steps = parse_steps(match.group(1))
            found.append(Example(page, line, steps, match.start(1), match.end(1)))
    return found


def run_distgate(args: list[str]) -> tuple[int, str]:
    """One command line in this process, as the console script runs it (``sys.argv`` is
    ``distgate ARGS``): its exit code and what it printed on standard output and standard
    error, interleaved as written.

    The command handles SIGINT and SIGTERM while it runs, and those signals are meant for
    the test run (Ctrl-C, or a time limit such as ``timeout`` stopping pytest on a slow
    machine): one that arrives is passed on once the command has ended, so that the run
    stops as it would have, instead of going on with the command's "interrupted" sentence
    compared with the page's output as a failure of that example."""
    import distgate.cli
    from distgate.cli import run

    received: list[int] = []
    stopped = distgate.cli._stopped

    def noted(number, frame) -> None:
        received.append(number)
        stopped(number, frame)

    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="utf-8", write_through=True)
    handler = signal.getsignal(signal.SIGTERM)
    try:
        with (
            contextlib.redirect_stdout(stream),
            contextlib.redirect_stderr(stream),
            mock.patch.object(sys, "argv", ["distgate", *args]),
            mock.patch.object(distgate.cli, "_stopped", noted),
        ):
            code = run()
    finally:
        signal.signal(signal.SIGTERM, handler)
    if received:
        signal.raise_signal(received[0])  # the test run's own handling (SIGINT: stop it)
    stream.flush()
    return code, raw.getvalue().decode("utf-8")


def _filter(text: str, command: list[str]) -> str:
    if command[:2] not in (["head", "-n"], ["tail", "-n"]) or len(command) != 3:
        raise ValueError(f"only '| head -n N' and '| tail -n N' may follow a pipe: {command}")
    lines = text.splitlines(keepends=True)
    n = int(command[2])
    return "".join(lines[:n] if command[0] == "head" else lines[-n:])


def session(example: Example, folder: Path) -> list[str]:
    """Run the example's commands in ``folder`` and return the output of each, as lines."""
    outputs: list[str] = []
    cwd = folder
    last_code: int | None = None
    piped = False
    for step in example.steps:
        parts = [shlex.split(p) for p in step.command.split(" | ")]
        words = parts[0]
        if words[0] == "distgate":
            with contextlib.chdir(cwd):
                last_code, text = run_distgate(words[1:])
            for command in parts[1:]:
                text = _filter(text, command)
            piped = len(parts) > 1
        elif len(parts) > 1:
            raise ValueError(f"only distgate's output may be piped: {step.command}")
        elif words == ["echo", "$?"]:
            if last_code is None or piped:
                raise ValueError("'echo $?' must follow a distgate command without a pipe")
            text = f"{last_code}\n"
            last_code = None
        elif words[0] == "cd" and len(words) == 2:
            cwd = (cwd / words[1]).resolve()
            if folder.parent.resolve() not in [cwd, *cwd.parents]:
                raise ValueError(f"'cd' leaves the checkout: {step.command}")
            text = ""
        elif words[0] == "cat" and len(words) == 2:
            text = (cwd / words[1]).read_text()
        elif words[:2] == ["head", "-n"] and len(words) == 4:
            text = "".join((cwd / words[3]).read_text().splitlines(keepends=True)[: int(words[2])])
        else:
            raise ValueError(f"a console example may not run this: {step.command}")
        if last_code not in (None, 0) and not piped and not _next_is_echo(example, step):
            raise AssertionError(
                f"{example.name}: '{step.command}' exited with {last_code}: "
                "show it with '$ echo $?' on the next line"
            )
        outputs.append(text)
    return outputs


def _next_is_echo(example: Example, step: Step) -> bool:
    index = example.steps.index(step)
    following = example.steps[index + 1 : index + 2]
    return bool(following) and following[0].command == "echo $?"


def normalise(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def sample_copy(tmp: Path) -> Path:
    folder = tmp / "sample_data"
    shutil.copytree(SAMPLE, folder, ignore=shutil.ignore_patterns("__pycache__"))
    return folder


@dataclass
class Snippet:
    page: str
    line: int
    code: str
    expected: str | None  # the ```text block that follows (None: the page lacks it)
    start: int  # offsets of that block's body in the page's text
    end: int

    @property
    def name(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def slow(self) -> bool:
        return any(f"distgate.{part}" in self.code for part in ("gate", "state", "workflows"))


def snippets() -> list[Snippet]:
    found = []
    for path in pages():
        text = path.read_text()
        page = str(path.relative_to(REPO))
        for match in PYTHON.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            start, end = (match.start(2), match.end(2)) if match.group(2) is not None else (0, 0)
            found.append(Snippet(page, line, match.group(1), match.group(2), start, end))
    return found


def run_snippet(snippet: Snippet, folder: Path) -> str:
    """Run the code from ``folder`` and return what it printed."""
    out = io.StringIO()
    with contextlib.chdir(folder), contextlib.redirect_stdout(out):
        exec(compile(snippet.code, snippet.name, "exec"), {"__name__": "__docs__"})
    return out.getvalue()


EXAMPLES = examples()
SNIPPETS = snippets()


@pytest.fixture(autouse=True)
def _plain_terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", COLUMNS)
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)


def test_the_documentation_has_console_examples():
    pages = {example.page for example in EXAMPLES}
    for command in ("baseline", "assess", "audit", "randomize", "replay", "simulate"):
        assert f"docs/{command}.md" in pages, f"docs/{command}.md has no console example"


@pytest.mark.parametrize(
    "example",
    [pytest.param(e, id=e.name, marks=[pytest.mark.slow] if e.slow else []) for e in EXAMPLES],
)
def test_a_console_example_prints_what_the_page_shows(example, tmp_path):
    outputs = session(example, sample_copy(tmp_path))
    for step, output in zip(example.steps, outputs, strict=True):
        assert normalise(output) == normalise("\n".join(step.expected)), (
            f"{example.name}: '$ {step.command}' printed something else: "
            "run 'python tests/test_docs_examples.py --update' and read the diff"
        )


@pytest.mark.parametrize(
    "snippet",
    [pytest.param(s, id=s.name, marks=[pytest.mark.slow] if s.slow else []) for s in SNIPPETS],
)
def test_a_python_example_runs_and_prints_what_the_page_shows(snippet, tmp_path):
    assert snippet.expected is not None, (
        f"{snippet.name}: no ```text block of what the code prints follows it"
    )
    printed = run_snippet(snippet, sample_copy(tmp_path))
    assert normalise(printed) == normalise(snippet.expected), (
        f"{snippet.name}: the code printed something else: "
        "run 'python tests/test_docs_examples.py --update' and read the diff"
    )


FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.S | re.M)
SPAN = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
COMMAND_NAMES = ("baseline", "assess", "audit", "randomize", "replay", "simulate", "serve",
                 "calibrate", "state")  # fmt: skip
# what a prose command that names no input is given, from sample_data/
SAMPLE_INPUTS = {
    "replay": ["soldiers.csv", "requests.csv"],
    "audit": ["published_counts.csv"],
    "state": ["gate.db"],
}
# a word standing for a value (FILE, DIR, [TABLE], ..., kanon=K)
PLACEHOLDER = re.compile(r"^(.*=)?(\[.*\]|\.\.\.|[A-Z][A-Z0-9_]*(\[,.*)?)$")


@dataclass
class ProseCommand:
    page: str
    line: int
    words: list[str]  # after 'distgate', up to a pipe

    @property
    def name(self) -> str:
        return f"{self.page}:{self.line}:{' '.join(self.words)}"


def prose_commands() -> list[ProseCommand]:
    """The commands of the pages outside console blocks (see the module docstring)."""
    found: dict[tuple[str, ...], ProseCommand] = {}
    for path in pages():
        if path.name == "cli-reference.md":  # the commands' own --help, generated
            continue
        text = path.read_text()
        page = str(path.relative_to(REPO))
        prose, last = [], 0
        for match in FENCE.finditer(text):
            prose.append((last, text[last : match.start()]))
            last = match.end()
            if match.group(1) in ("sh", "bash", "shell"):
                line = text.count("\n", 0, match.start()) + 2
                for command in match.group(2).replace("\\\n", " ").splitlines():
                    words = shlex.split(command.split(" #")[0])
                    if words[:1] == ["distgate"]:
                        found.setdefault(tuple(words), ProseCommand(page, line, words[1:]))
        prose.append((last, text[last:]))
        for offset, chunk in prose:
            for span in SPAN.finditer(chunk):
                words = span.group(1).split("|")[0].split()
                if words[:1] == ["distgate"]:
                    words = words[1:]
                elif not (words[:1] and words[0] in COMMAND_NAMES and len(words) > 1):
                    continue
                if not words or not (words[0] in COMMAND_NAMES or words[0].startswith("-")):
                    continue
                line = text.count("\n", 0, offset + span.start()) + 1
                found.setdefault(tuple(words), ProseCommand(page, line, words))
    return list(found.values())


def _command_of(words: list[str]):
    """(the click command the words run, the words after its name or names)."""
    import typer

    from distgate.cli import make_app

    command = typer.main.get_command(make_app(only=words[0]))
    rest = list(words)
    while hasattr(command, "commands") and rest and rest[0] in command.commands:
        command = command.commands[rest.pop(0)]
    return command, rest


def _check_options(prose: ProseCommand) -> None:
    """Every option the prose command names is one of its command's."""
    command, rest = _command_of(prose.words)
    known = {name for param in command.params for name in (*param.opts, *param.secondary_opts)}
    known |= {"-h", "--help"}
    named = {word.split("=")[0] for word in rest if word.startswith("-")}
    assert named <= known, f"{prose.name}: no such option {sorted(named - known)}"


def _runnable(prose: ProseCommand) -> list[str] | None:
    """The command line to run for the prose command, or None when it is a name, a
    synopsis or needs a server or a scheduler (then its options are checked)."""
    words = prose.words
    command, rest = _command_of(words)
    if not rest or any(PLACEHOLDER.match(word) for word in rest):
        return None  # a command's name, or a synopsis
    if words[0] == "serve" or "--scheduler" in rest:
        command.make_context(command.name, list(rest))  # a usage error raises here
        return None
    takes_value = {
        name
        for p in command.params
        if p.param_type_name == "option" and not p.is_flag and not p.count
        for name in p.opts
    }
    if rest[-1] in takes_value:
        return None  # a flag named, not given
    given = command.make_context(command.name, list(rest), resilient_parsing=True).params
    arguments = [p for p in command.params if p.param_type_name == "argument"]
    head = words[: len(words) - len(rest)]
    if arguments and all(given.get(p.name) in (None, ()) for p in arguments):
        inputs = SAMPLE_INPUTS.get(words[0], ["soldiers.csv"])
        return [*head, *inputs, *rest]
    return list(words)


PROSE = prose_commands()


def test_the_prose_commands_are_found():
    named = {" ".join(p.words) for p in PROSE}
    assert {"assess -m kanon,ldiv,tclose --threshold kanon=1000 --threshold ldiv=5",
            "assess -m kanon,ldiv,tclose --threshold kanon=K --threshold ldiv=L",
            "replay --state"} <= named  # fmt: skip
    assert len(PROSE) > 40


@pytest.mark.parametrize(
    "prose",
    [
        pytest.param(
            p,
            id=p.name,
            marks=[pytest.mark.slow] if p.words[0] in SLOW_COMMANDS else [],
        )
        for p in PROSE
    ],
)
def test_a_command_shown_in_prose_runs_without_a_usage_error(prose, tmp_path):
    _check_options(prose)
    argv = _runnable(prose)
    if argv is None:
        return
    folder = sample_copy(tmp_path)
    if argv[0] == "state":  # a state file to read
        with contextlib.chdir(folder):
            assert (
                run_distgate(["replay", "soldiers.csv", "requests.csv", "--state", "gate.db"])[0]
                == 0
            )
    with contextlib.chdir(folder):
        code, output = run_distgate(argv)
    assert code in (0, 1), f"{prose.name}: 'distgate {' '.join(argv)}' ended with {code}: {output}"


def update(pages: list[str]) -> None:
    """Rewrite the expected output of every console block (of ``pages`` only, when given,
    e.g. ``docs/simulate.md``) with what it prints now."""
    import tempfile

    os.environ["COLUMNS"] = COLUMNS
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "NO_COLOR"):
        os.environ.pop(name, None)
    by_page: dict[str, list[Example | Snippet]] = {}
    for item in [*EXAMPLES, *(s for s in SNIPPETS if s.expected is not None)]:
        by_page.setdefault(item.page, []).append(item)
    for page, found in by_page.items():
        if pages and page not in pages:
            continue
        path = REPO / page
        text = path.read_text()
        for item in sorted(found, key=lambda i: i.start, reverse=True):  # offsets stay valid
            with tempfile.TemporaryDirectory() as tmp:
                if isinstance(item, Snippet):
                    body = normalise(run_snippet(item, sample_copy(Path(tmp))))
                else:
                    body = []
                    outputs = session(item, sample_copy(Path(tmp)))
                    for step, output in zip(item.steps, outputs, strict=True):
                        body.append("$ " + _wrapped(step, text[item.start : item.end]))
                        body.extend(normalise(output))
            text = text[: item.start] + "\n".join(body) + "\n" + text[item.end :]
        path.write_text(text)
        print(f"updated {len(found)} example(s) in {page}")


def _wrapped(step: Step, body: str) -> str:
    """The command as the page writes it (keeping its line continuations)."""
    for start in (m.start() for m in re.finditer(r"^\$ ", body, re.M)):
        lines = []
        for line in body[start + 2 :].splitlines():
            lines.append(line)
            if not line.endswith("\\"):
                break
        joined = lines[0]
        for more in lines[1:]:
            joined = joined[:-1].rstrip() + " " + more.strip()
        if joined.endswith("\\"):
            continue
        if joined == step.command:
            return "\n".join(lines)
    return step.command


if __name__ == "__main__":
    if sys.argv[1:2] != ["--update"]:
        sys.exit("usage: python tests/test_docs_examples.py --update [PAGE ...]")
    sys.path.insert(0, str(REPO))
    update(sys.argv[2:])
