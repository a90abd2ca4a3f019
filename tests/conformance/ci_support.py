"""Shared by the CI tests (issue 39): running the CLI as a user does, and reading Markdown as a renderer does."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token

from tests.conftest import ROOT


def intentref(*args: str, env: Mapping[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``intentref ARGS`` in a process of its own; ``env`` is added to this process's environment."""
    environment = {key: value for key, value in os.environ.items() if key != "GITHUB_STEP_SUMMARY"}
    environment.update(env or {})
    return subprocess.run([sys.executable, "-m", "intentref.cli", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, env=environment, check=False)  # fmt: skip


@contextlib.contextmanager
def serving(argv: list[str], log: Path, env: Mapping[str, str] | None = None) -> Iterator[str]:
    """The URL of a server started with ``argv`` that prints ``url URL`` once it listens; stopped after."""
    with log.open("w") as stderr:  # a file, not a pipe nobody reads while the server serves
        proc = subprocess.Popen(argv, env={**os.environ, **(env or {})}, stdout=subprocess.PIPE, stderr=stderr,
                                text=True)  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("url "), f"no url line (exit {proc.poll()}): {log.read_text()[-2000:]}"
        yield line.split()[1]
    finally:
        proc.terminate()
        proc.wait(timeout=15)


@dataclass
class Page:
    """What a Markdown renderer makes of a text: headings, tables (as rows of cell texts), list items."""

    headings: list[tuple[int, str]] = field(default_factory=list)
    tables: list[list[list[str]]] = field(default_factory=list)
    items: list[str] = field(default_factory=list)
    code: list[str] = field(default_factory=list)
    table_under: dict[str, list[list[str]]] = field(default_factory=dict)  # the first table after each heading


def parse(text: str) -> Page:
    """``text`` read by markdown-it (CommonMark with GitHub's tables)."""
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    page = Page()
    heading: str | None = None
    table: list[list[str]] | None = None
    in_item = 0
    for index, token in enumerate(tokens):
        if token.type == "heading_open":
            heading = tokens[index + 1].content
            page.headings.append((int(token.tag[1]), heading))
        elif token.type == "table_open":
            table = []
        elif token.type == "table_close" and table is not None:
            page.tables.append(table)
            if heading is not None:
                page.table_under.setdefault(heading, table)
            table = None
        elif token.type == "tr_open" and table is not None:
            table.append([])
        elif token.type == "inline" and table is not None:
            table[-1].append(_text(token))
        elif token.type == "list_item_open":
            in_item += 1
        elif token.type == "list_item_close":
            in_item -= 1
        elif token.type == "inline" and in_item:
            page.items.append(_text(token))
        if token.type == "inline":
            page.code += [child.content for child in token.children or [] if child.type == "code_inline"]
    return page


def _text(token: Token) -> str:
    """An inline token's text as a reader sees it (escapes resolved, code spans' content kept)."""
    return "".join(child.content for child in token.children or [] if child.type in ("text", "code_inline")).strip()


def cases_by_id(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {case["id"]: case for case in report["cases"]}


def read(path: Path) -> str:
    return path.read_text("utf-8")
