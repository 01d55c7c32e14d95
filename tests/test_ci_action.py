"""The GitHub Action (action.yml) and the pre-commit hook (.pre-commit-hooks.yaml), run as
their hosts run them.

The action's run steps are executed in order by a small runner that does what GitHub's
runner does for a composite action: it evaluates the ``${{ }}`` expressions of each
step's ``env``, ``if`` and ``working-directory`` (inputs, earlier steps' outputs, the
action's path), runs the script with ``bash --noprofile --norc -eo pipefail``, gives it
GITHUB_OUTPUT, GITHUB_STEP_SUMMARY, RUNNER_TEMP and GITHUB_ACTION_PATH, and skips later
steps after a failure unless their condition says ``always()``. Steps that use other
actions (setup-python, upload-artifact) are GitHub's own: the runner checks what they are
given instead. ``pip install`` is recorded, not run (distgate is installed already).

The hook's entry is run as pre-commit runs it: with the hook's args and the staged files
that match its ``files`` pattern, in a temporary git repository.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import junitparser
import pytest
import yaml

from tests.conftest import REPO, SAMPLE

ACTION = yaml.safe_load((REPO / "action.yml").read_text())
HOOKS = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
BIN = Path(sys.executable).parent


class ActionRun:
    """One run of the composite action with ``inputs`` in ``workspace``."""

    def __init__(self, workspace: Path, inputs: dict[str, str], tmp: Path) -> None:
        declared = ACTION["inputs"]
        missing = [n for n, spec in declared.items() if spec.get("required") and n not in inputs]
        assert not missing, missing
        self.inputs = {
            n: str(inputs.get(n, spec.get("default", ""))) for n, spec in declared.items()
        }
        self.workspace = workspace
        self.tmp = tmp
        self.summary = tmp / "step_summary.md"
        self.summary.write_text("")
        self.pip_log = tmp / "pip.log"
        self.outputs: dict[str, dict[str, str]] = {}
        self.logs: list[tuple[str, int | None, str]] = []  # (step, exit code or None, output)
        self.used: list[tuple[str, dict[str, str]]] = []  # (action, its evaluated inputs)
        self.failed = False
        shims = tmp / "shims"
        shims.mkdir()
        python = shims / "python"  # records `python -m pip install ...`, runs everything else
        python.write_text(
            "#!/usr/bin/env bash\n"
            'if [ "$1 $2 $3" = "-m pip install" ]; then printf "%s\\n" "$@" > "$PIP_LOG"; '
            "exit 0; fi\n"
            f'exec "{sys.executable}" "$@"\n'
        )
        python.chmod(0o755)
        self.path = os.pathsep.join([str(shims), str(BIN), os.environ["PATH"]])

    def evaluate(self, text: str) -> str:
        def value(match: re.Match) -> str:
            expression = match.group(1)
            if expression.startswith("inputs."):
                return self.inputs[expression.removeprefix("inputs.")]
            if expression == "github.action_path":
                return str(REPO)
            found = re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expression)
            if found:
                return self.outputs.get(found.group(1), {}).get(found.group(2), "")
            raise AssertionError(f"an expression the test runner does not know: {expression}")

        return EXPRESSION.sub(value, str(text))

    def condition(self, text: str | None) -> bool:
        """GitHub's ``if``: success() by default; the forms action.yml uses."""
        if text is None:
            return not self.failed
        result = True
        for term in (t.strip() for t in EXPRESSION.sub(r"\1", text).split("&&")):
            if term == "always()":
                continue
            found = re.fullmatch(r"inputs\.([\w-]+) (==|!=) ''", term)
            assert found, f"a condition the test runner does not know: {term}"
            empty = self.inputs[found.group(1)] == ""
            result &= empty if found.group(2) == "==" else not empty
        return result

    def run(self) -> ActionRun:
        assert ACTION["runs"]["using"] == "composite"
        for step in ACTION["runs"]["steps"]:
            name = step.get("name", step.get("uses"))
            if not self.condition(step.get("if")):
                self.logs.append((name, None, "skipped"))
                continue
            if "uses" in step:
                given = {k: self.evaluate(v) for k, v in step.get("with", {}).items()}
                self.used.append((step["uses"], given))
                continue
            self.run_script(step, name)
        return self

    def run_script(self, step: dict, name: str) -> None:
        script = step["run"]
        assert "${{" not in script, f"{name}: inputs reach a script through env only"
        output = self.tmp / f"output-{len(self.logs)}"
        output.write_text("")
        folder = self.workspace / self.evaluate(step.get("working-directory", "."))
        env = {
            **os.environ,
            "PATH": self.path,
            "PIP_LOG": str(self.pip_log),
            "CI": "true",
            "GITHUB_ACTIONS": "true",
            "GITHUB_WORKSPACE": str(self.workspace),
            "GITHUB_ACTION_PATH": str(REPO),
            "GITHUB_OUTPUT": str(output),
            "GITHUB_STEP_SUMMARY": str(self.summary),
            "RUNNER_TEMP": str(self.tmp),
            **{k: self.evaluate(v) for k, v in step.get("env", {}).items()},
        }
        file = self.tmp / f"step-{len(self.logs)}.sh"
        file.write_text(script)
        assert step["shell"] == "bash"
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(file)],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        self.logs.append((name, done.returncode, done.stdout + done.stderr))
        if "id" in step:
            pairs = (line.split("=", 1) for line in output.read_text().splitlines() if line)
            self.outputs[step["id"]] = dict(pairs)
        if done.returncode != 0:
            self.failed = True

    def log(self, step: str) -> tuple[int | None, str]:
        return next((code, text) for name, code, text in self.logs if name == step)

    def output(self, name: str) -> str:
        """An output of the action, as the workflow that uses it reads it."""
        return self.evaluate(ACTION["outputs"][name]["value"])


@pytest.fixture
def workspace(tmp_path) -> Path:
    """A checked-out repository with a settings file, the baseline and two releases."""
    folder = tmp_path / "workspace"
    (folder / "releases").mkdir(parents=True)
    for name in ("distgate.toml", "baseline.csv", "releases/2026-q1.csv", "releases/2026-q2.csv"):
        shutil.copy(SAMPLE / name, folder / name)
    return folder


def run_action(workspace: Path, tmp_path: Path, **inputs: str) -> ActionRun:
    runner = tmp_path / "runner"
    runner.mkdir()
    return ActionRun(workspace, {k.replace("_", "-"): v for k, v in inputs.items()}, runner).run()


ARGS = "--baseline baseline.csv --metric 'kld,cst'"


def test_the_action_fails_the_job_on_an_unsafe_release(workspace, tmp_path):
    job = run_action(workspace, tmp_path, table="releases/2026-q2.csv", args=ARGS)
    assert job.failed
    assert job.pip_log.read_text().split() == [
        "-m",
        "pip",
        "install",
        "--disable-pip-version-check",
        "--quiet",
        f"{REPO}[plots]",
    ]  # fmt: skip  (distgate from the action's own source, with the report's figures)
    assert (job.output("exit-code"), job.output("verdict")) == ("1", "unsafe")
    code, text = job.log("Fail the job on an unsafe release")
    assert code == 1
    assert "::error title=distgate assess::releases/2026-q2.csv is unsafe to release" in text
    # the job summary: the verdict, L2 first
    summary = job.summary.read_text()
    assert summary.startswith("### distgate assess releases/2026-q2.csv\n")
    assert "**UNSAFE: releasing 400 records fails at least one metric.**" in summary
    table = [
        line
        for line in summary.splitlines()
        if line.startswith("| kld") or line.startswith("| cst")
    ]
    assert table[0].startswith("| kld | 0.2 | L2 | 54 | 0.641989 | 0.163051 | BLOCKED |")
    assert table[1].startswith("| cst | 0.2 | L2 | 54 |")
    # the JUnit report for a test reporter, the HTML report for the artifact
    junit = Path(job.output("junit"))
    assert junit == workspace / "distgate-junit.xml"
    cases = [case for suite in junitparser.JUnitXml.fromfile(str(junit)) for case in suite]
    assert sorted(c.name for c in cases if not c.is_passed) == ["L2", "L2"]
    (action, given), *_ = [u for u in job.used if u[0].startswith("actions/upload-artifact")]
    assert given["name"] == "distgate-report"
    assert Path(given["path"]) == workspace / "distgate-report.html"
    assert "<html" in Path(given["path"]).read_text()[:200]


def test_the_action_passes_a_safe_release(workspace, tmp_path):
    job = run_action(
        workspace, tmp_path, table="releases/2026-q1.csv", args=ARGS, junit="", python_version=""
    )
    assert not job.failed, job.logs
    assert (job.output("exit-code"), job.output("verdict"), job.output("junit")) == (
        "0",
        "safe",
        "",
    )
    assert not (workspace / "distgate-junit.xml").exists()
    assert "**SAFE: releasing 600 records passes every metric.**" in job.summary.read_text()
    assert [u[0].split("@")[0] for u in job.used] == ["actions/upload-artifact"]  # no setup
    code, text = job.log("Fail the job on an unsafe release")
    assert code == 0 and "releases/2026-q1.csv is safe to release" in text


def test_the_action_fails_with_exit_2_on_bad_input(workspace, tmp_path):
    job = run_action(workspace, tmp_path, table="releases/missing.csv", args=ARGS)
    assert job.failed and job.output("verdict") == "bad-input"
    assert job.log("Fail the job on an unsafe release")[0] == 2
    code, text = job.log("Assess the release")
    assert code == 0 and "distgate: " in text and "missing.csv" in text
    assert job.summary.read_text() == ""  # nothing assessed, nothing summarised


def test_the_action_refuses_args_it_cannot_split_and_installs_a_given_package(workspace, tmp_path):
    job = run_action(
        workspace,
        tmp_path,
        table="releases/2026-q1.csv",
        args="--metric 'kld",
        package="distgate==0.1.0",
    )
    assert job.pip_log.read_text().split()[-1] == "distgate==0.1.0"
    assert job.failed and job.output("exit-code") == "2"
    assert "The args input cannot be split" in job.log("Assess the release")[1]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=True
    ).stdout


def run_hook(repo: Path, hook: dict, *args: str) -> subprocess.CompletedProcess:
    """What pre-commit does for the hook: its entry with its args and the staged files
    that match its ``files`` pattern."""
    staged = git(repo, "diff", "--cached", "--name-only", "--diff-filter=ACMR").split()
    files = [f for f in staged if re.search(hook["files"], f)]
    entry = BIN / hook["entry"]
    env = {**os.environ, "COLUMNS": "80"}
    return subprocess.run(
        [str(entry), *args, *files], cwd=repo, env=env, capture_output=True, text=True, timeout=300
    )


def documented_hook_output() -> str:
    """The hook's output in docs/ci.md, after the lines pre-commit itself prints."""
    page = (REPO / "docs" / "ci.md").read_text()
    block = re.search(
        r"^```text\n(distgate assess \(candidate releases\).*?)^```$", page, re.S | re.M
    )
    assert block, "docs/ci.md shows a run of the hook"
    return block.group(1)[block.group(1).index("== distgate assess") :]


@pytest.mark.slow  # three runs of the hook, a few seconds each
def test_the_pre_commit_hook_assesses_the_staged_releases(workspace):
    (hook,) = HOOKS
    assert {"id", "name", "entry", "language"} <= set(hook) and hook["language"] == "python"
    assert (BIN / hook["entry"]).exists(), "the hook's entry is one of distgate's scripts"
    repo = workspace
    git(repo, "init", "-q")
    (repo / "notes.csv").write_text("a,b\n1,2\n")  # not a release: the hook leaves it alone
    git(repo, "add", "distgate.toml", "baseline.csv", "notes.csv", "releases/2026-q1.csv")
    safe = run_hook(repo, hook, "--baseline", "baseline.csv")
    assert safe.returncode == 0, safe.stderr
    assert safe.stdout.splitlines()[0] == "== distgate assess releases/2026-q1.csv"
    assert "== releases/2026-q1.csv: safe" in safe.stdout and "notes.csv" not in safe.stdout

    git(repo, "add", "releases/2026-q2.csv")
    both = run_hook(repo, hook, "--baseline", "baseline.csv", "--metric", "kld")
    assert both.returncode == 1  # the commit stops
    assert "== releases/2026-q1.csv: safe" in both.stdout
    assert "== releases/2026-q2.csv: UNSAFE" in both.stdout
    assert "UNSAFE: releasing 400 records fails at least one metric." in both.stdout
    assert both.stdout == documented_hook_output()  # the page shows what the hook prints

    (repo / "releases" / "2026-q3.csv").write_text("id,age\n1,30\n")  # no location column
    git(repo, "add", "releases/2026-q3.csv")
    bad = run_hook(repo, hook, "--baseline", "baseline.csv")
    assert bad.returncode == 2  # an unreadable release wins over an unsafe one
    assert "== releases/2026-q3.csv: not assessed (bad input)" in bad.stdout
    assert "location" in bad.stderr


def test_the_hook_refuses_args_that_are_not_options_of_assess(workspace):
    (hook,) = HOOKS
    entry = str(BIN / hook["entry"])
    done = subprocess.run(
        [entry, "--bogus", "releases/2026-q1.csv"], cwd=workspace, capture_output=True, text=True
    )
    assert done.returncode == 2
    assert done.stderr.startswith("distgate-pre-commit: No such option: --bogus")
    nothing = subprocess.run([entry, "--metric", "kld"], cwd=workspace, capture_output=True)
    assert nothing.returncode == 0 and nothing.stdout == b""  # no staged release
