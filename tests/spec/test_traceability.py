"""spec/ is the contract: every requirement is checked somewhere, and every citation resolves.

A requirement counts as checked when a test, a conformance fixture or a property cites its
ID.  The only other way out is an explicit ``Check: not observable — <reason>`` line in its
own entry, for statements about what hosts should do that no runtime can observe.

Only ``spec/requirements.md`` and ``spec/decisions*.md`` define IDs.  The other pages under
spec/ (the tables the README links to, the equivalent mutants) and the README only cite
them: their citations must resolve, but they check no requirement.
"""

from __future__ import annotations

import json
import pathlib
import re

from tests.conftest import ROOT

ID = re.compile(r"\b([RD]-[A-Z]{3,4}-\d{3})\b")
HEADING = re.compile(r"^#### ([RD]-[A-Z]{3,4}-\d{3}) — .+$", re.MULTILINE)
NOT_OBSERVABLE = "Check: not observable — "


def _defines(path: pathlib.Path) -> bool:
    return path.name == "requirements.md" or path.name.startswith("decisions")


def _spec_entries() -> dict[str, str]:
    """ID -> the text of its entry, from the requirement and decision files under spec/."""
    entries: dict[str, str] = {}
    for path in sorted((ROOT / "spec").glob("*.md")):
        if not _defines(path):
            continue  # a page of notes or tables (equivalent mutants, levels, limits) defines nothing
        text = path.read_text("utf-8")
        matches = list(HEADING.finditer(text))
        for match, following in zip(matches, [*matches[1:], None], strict=True):
            end = following.start() if following else len(text)
            ident = match.group(1)
            assert ident not in entries, f"{ident} is defined twice ({path.name})"
            entries[ident] = text[match.start() : end]
    return entries


def _citing_files() -> list[pathlib.Path]:
    files = []
    for folder in ("tests", "conformance", "properties"):
        for path in (ROOT / folder).rglob("*"):
            if path.is_file() and path.suffix in (".py", ".json") and "node_modules" not in path.parts:
                files.append(path)
    return files


def _documentation_pages() -> list[pathlib.Path]:
    """The README and the pages under spec/ that define nothing: they cite IDs, they check nothing."""
    return [ROOT / "README.md", *(p for p in sorted((ROOT / "spec").glob("*.md")) if not _defines(p))]


def _cited(paths: list[pathlib.Path]) -> dict[str, set[str]]:
    cited: dict[str, set[str]] = {}
    for path in paths:
        if path.resolve() == pathlib.Path(__file__).resolve():
            continue
        for ident in ID.findall(path.read_text("utf-8", errors="replace")):
            cited.setdefault(ident, set()).add(str(path.relative_to(ROOT)))
    return cited


def test_only_the_requirement_and_decision_files_define_ids():
    # A heading like an entry's in a page of tables would be read as nothing: say so instead.
    for path in _documentation_pages():
        assert not HEADING.search(path.read_text("utf-8")), f"{path.name} defines an ID; move it to decisions*.md"


def test_requirement_ids_are_well_formed_and_unique():
    entries = _spec_entries()
    requirements = [i for i in entries if i.startswith("R-")]
    assert len(requirements) >= 300
    for ident, text in entries.items():
        if ident.startswith("R-"):
            assert re.search(r"^Source: `0\d\d_[0-9a-f]{16}\.txt#.+`$", text, re.MULTILINE), f"{ident} cites no seed heading"


def test_every_requirement_is_checked_or_declared_not_observable():
    entries = _spec_entries()
    cited = _cited(_citing_files())
    unchecked = sorted(
        ident for ident, text in entries.items()
        if ident.startswith("R-") and ident not in cited and NOT_OBSERVABLE not in text
    )  # fmt: skip
    assert unchecked == [], f"{len(unchecked)} requirements have no check: {' '.join(unchecked)}"


def test_not_observable_requirements_give_a_reason():
    for ident, text in _spec_entries().items():
        if NOT_OBSERVABLE in text:
            reason = text.split(NOT_OBSERVABLE, 1)[1].split("\n", 1)[0]
            assert len(reason.strip()) >= 10, f"{ident}: say why it cannot be observed"


def test_every_citation_names_an_existing_requirement_or_decision():
    entries = _spec_entries()
    sources = _citing_files() + [p for p in (ROOT / "reference").rglob("*.py")] + _documentation_pages()
    dangling = {ident: files for ident, files in _cited(sources).items() if ident not in entries}
    assert dangling == {}, f"citations of unknown IDs: {json.dumps({k: sorted(v) for k, v in dangling.items()})}"
