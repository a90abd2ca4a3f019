"""The README's commands and quoted code are the real ones."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import ROOT

README = (ROOT / "README.md").read_text("utf-8")


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, re.S)


def test_readme_opens_with_the_main_job_and_the_test_command():
    first, second = _blocks("bash")[:2]
    assert "intentref conformance" in first and first.strip().startswith("python3 -m venv")
    assert second.strip().startswith("bash .ci/setup && .venv/bin/python -m pytest")
    # .ci/run reads the line after the marker: it must be this block's command.
    marker = README.index("<!-- test-command -->")
    assert README[marker:].split("\n")[2] == second.strip()
    assert README.index(first) < marker


def test_the_readme_points_at_the_tested_host_loop():
    # The example lives in one place, run by tests/mcp/test_host_loop_example.py; the README links it.
    assert "](tests/mcp/host_loop_example.py)" in README


def test_every_command_the_readme_shows_exists():
    from intentref.cli import build_parser

    subcommands = set(build_parser()._subparsers._group_actions[0].choices)  # type: ignore[union-attr]
    used = {name for block in _blocks("bash") for name in re.findall(r"intentref (\w+)", block)}
    assert used <= subcommands, used - subcommands


def test_the_readme_follows_a_users_day():
    # The two commands, the protocol in one screen, then: run the suite, read a failure, the
    # reference server (MCP server), test your host, properties / fuzz / check, development. The operating
    # detail lives in conformance/README.md, the long tables on linked spec/ pages.
    order = ["<!-- test-command -->", "## The protocol in one screen", "## Run the suite against your implementation",
             "## Read a failure", "## MCP server", "## Test your host",
             "## Properties, fuzz cases and offline checks", "## Development"]  # fmt: skip
    at = [README.index(f"\n{heading}\n") if heading.startswith("#") else README.index(heading) for heading in order]
    assert at == sorted(at), [order[i] for i in range(len(at)) if at[i] != sorted(at)[i]]


def _anchors(page: Path) -> set[str]:
    """GitHub's anchors of a page's headings: lower case, punctuation dropped, spaces as hyphens."""
    headings = re.findall(r"^#+ (.+)$", page.read_text("utf-8"), re.M)
    return {re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-") for heading in headings}


def test_the_readmes_and_the_spec_pages_link_to_files_and_headings_that_exist():
    pages = [ROOT / "README.md", ROOT / "conformance/README.md", ROOT / "tests/outside/README.md",
             *sorted((ROOT / "spec").glob("*.md"))]  # fmt: skip
    broken = []
    for page in pages:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text("utf-8")):
            path, _, anchor = target.partition("#")
            linked = (page.parent / path) if path else page
            if re.match(r"[a-z]+:", target):
                continue
            if not linked.exists() or (anchor and linked.suffix == ".md" and anchor not in _anchors(linked)):
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert broken == []
