"""Loading and checking the fixture files (``conformance/cases/*.json``)."""

from __future__ import annotations

import fnmatch
import json
import pathlib
from dataclasses import dataclass
from typing import Any

import jsonschema

from intentref._paths import data_dir


@dataclass(frozen=True)
class Case:
    area: str
    file: str
    data: dict[str, Any]

    @property
    def id(self) -> str:
        return str(self.data["id"])

    @property
    def level(self) -> str:
        return str(self.data["level"])

    @property
    def bridge_options(self) -> dict[str, Any]:
        return dict(self.data.get("bridge", {}))

    @property
    def transport(self) -> str:
        return str(self.data.get("transport", "any"))


def fixture_schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads((data_dir("conformance") / "fixture.schema.json").read_text("utf-8"))
    return schema


def fixture_files(folder: pathlib.Path | None = None) -> list[pathlib.Path]:
    folder = folder or data_dir("conformance") / "cases"
    return sorted(folder.glob("*.json"))


def load_cases(folder: pathlib.Path | None = None, validate: bool | None = None) -> list[Case]:
    """The cases of ``folder`` (the bundled fixtures by default), in file and case order.

    ``validate``: check each file against ``fixture.schema.json`` first.  By default only a
    folder the caller names is checked: the bundled fixtures are checked by this project's
    tests (``tests/conformance/test_fixture_files.py``), and checking them again costs every
    run about a second of start-up on a small machine (issue 27's profile of the bundled run).
    """
    if validate is None:
        validate = folder is not None
    validator = jsonschema.Draft202012Validator(fixture_schema()) if validate else None
    cases: list[Case] = []
    seen: dict[str, str] = {}
    for path in fixture_files(folder):
        document = json.loads(path.read_text("utf-8"))
        if validator is not None:
            errors = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
            if errors:
                first = errors[0]
                pointer = "/" + "/".join(str(p) for p in first.absolute_path)
                raise ValueError(f"{path.name}{pointer}: {first.message}")
        for case in document["cases"]:
            if case["id"] in seen:
                raise ValueError(f"case id {case['id']} appears in {seen[case['id']]} and {path.name}")
            seen[case["id"]] = path.name
            cases.append(Case(document["area"], path.name, case))
    return cases


def select(cases: list[Case], level: str | None, only: list[str], skip: list[str]) -> list[Case]:
    out = []
    for case in cases:
        if level == "normative" and case.level != "normative":
            continue
        if only and not any(fnmatch.fnmatchcase(case.id, pattern) for pattern in only):
            continue
        if any(fnmatch.fnmatchcase(case.id, pattern) for pattern in skip):
            continue
        out.append(case)
    return out
