"""The README's commands and quoted code are the real ones."""

from __future__ import annotations

import re

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


def test_the_host_loop_in_the_readme_is_the_tested_example():
    example = (ROOT / "tests/mcp/host_loop_example.py").read_text("utf-8")
    assert example.strip() in [block.strip() for block in _blocks("python")]


def test_every_command_the_readme_shows_exists():
    from intentref.cli import build_parser

    subcommands = set(build_parser()._subparsers._group_actions[0].choices)  # type: ignore[union-attr]
    used = {name for block in _blocks("bash") for name in re.findall(r"intentref (\w+)", block)}
    assert used <= subcommands, used - subcommands


def test_the_readme_follows_a_users_day():
    # The two commands, the suite against your implementation, the MCP server, the in-process
    # API, properties / fuzz / check, development; the long tables live on linked spec/ pages.
    order = ["<!-- test-command -->", "## Run the suite against your implementation", "## Test your host", "## MCP server",
             "## The in-process API", "## Properties, fuzz cases and offline checks", "## Development"]  # fmt: skip
    at = [README.index(f"\n{heading}\n") if heading.startswith("#") else README.index(heading) for heading in order]
    assert at == sorted(at), [order[i] for i in range(len(at)) if at[i] != sorted(at)[i]]


def test_the_readme_and_the_spec_pages_link_to_files_that_exist():
    pages = [ROOT / "README.md", *sorted((ROOT / "spec").glob("*.md"))]
    broken = []
    for page in pages:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text("utf-8")):
            path = target.split("#")[0]
            if not re.match(r"[a-z]+:", target) and path and not (page.parent / path).exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert broken == []
