"""The bundled fixture files are valid against ``conformance/fixture.schema.json``.

``load_cases()`` does not check the bundled files on every run (it checks a folder the caller
names); this test is where they are checked, file by file, so a broken fixture fails here
with its file and pointer.
"""

from __future__ import annotations

import json
import pathlib

import jsonschema
import pytest

from intentref.suite.cases.fixtures import fixture_files, fixture_schema, load_cases

FILES = fixture_files()


def test_the_bundled_folder_holds_the_fixture_files() -> None:
    assert len(FILES) >= 10
    assert len(load_cases()) > 1000


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_each_bundled_fixture_file_is_valid(path: pathlib.Path) -> None:
    jsonschema.Draft202012Validator(fixture_schema()).validate(json.loads(path.read_text("utf-8")))


def test_a_folder_the_caller_names_is_checked(tmp_path: pathlib.Path) -> None:
    (tmp_path / "bad.json").write_text(json.dumps({"area": "BAD", "title": "t", "cases": [{"id": "BAD-0001"}]}))
    with pytest.raises(ValueError, match=r"bad\.json"):
        load_cases(tmp_path)
    assert load_cases(tmp_path, validate=False)[0].id == "BAD-0001"  # unchecked when asked
