"""Blank text (D-TXT-001) and JSON Pointer resolution (R-DAT-005, R-DAT-006), checked directly.

The conformance cases reach these helpers only through whole candidates; these tests pin
each character of the ECMA-262 white-space set and each branch of pointer resolution, so a
mutant of one of them is caught by a test that names the rule it breaks.
"""

from __future__ import annotations

import pytest

from intentref.core import jsonpointer
from intentref.core.text import ECMA_WHITESPACE, has_text

# ECMA-262 WhiteSpace and LineTerminator, spelled out independently of intentref.core.text.
ECMA_262 = [
    "\u0009", "\u000a", "\u000b", "\u000c", "\u000d", "\u0020", "\u00a0", "\u1680",
    *(chr(c) for c in range(0x2000, 0x200B)),
    "\u2028", "\u2029", "\u202f", "\u205f", "\u3000", "\ufeff",
]  # fmt: skip


def test_the_white_space_set_is_exactly_ecma_262():
    # spec: D-TXT-001
    assert sorted(ECMA_WHITESPACE) == sorted(ECMA_262)
    assert len(set(ECMA_WHITESPACE)) == len(ECMA_WHITESPACE)


@pytest.mark.parametrize("ch", ECMA_262, ids=[f"U+{ord(c):04X}" for c in ECMA_262])
def test_each_ecma_white_space_character_alone_is_blank(ch):
    # spec: D-TXT-001
    assert not has_text(ch)
    assert not has_text(ch * 3)
    assert has_text(ch + "x" + ch)


@pytest.mark.parametrize("ch", ["\u001c", "\u001d", "\u001e", "\u001f", "\u0085", "\u200b", "x", "中", "0"])
def test_characters_python_strips_but_ecma_keeps_are_text(ch):
    # spec: D-TXT-001 -- str.strip() would call U+001C..U+001F and U+0085 blank; ECMA-262 does not.
    assert has_text(ch)
    assert has_text(" " + ch + " ")


@pytest.mark.parametrize("value", ["", None, 0, 1, ["x"], {"x": "y"}, b"x", True])
def test_empty_text_and_non_strings_are_not_text(value):
    # spec: D-TXT-001
    assert has_text(value) is False


def test_has_text_returns_a_bool():
    assert has_text("x") is True


DOC = {"a": [{"b": 1}, 2, [3]], "": 4, "a/b": 5, "m~n": 6, "n": None}


@pytest.mark.parametrize(
    ("tokens", "expected"),
    [
        ([], DOC),
        (["a"], DOC["a"]),
        (["a", "0", "b"], 1),
        (["a", "1"], 2),
        (["a", "2", "0"], 3),
        ([""], 4),
        (["a/b"], 5),
        (["m~n"], 6),
        (["n"], None),
    ],
)
def test_resolve_finds_every_node(tokens, expected):
    # spec: R-DAT-005 R-DAT-006
    assert jsonpointer.resolve(DOC, tokens) == expected
    assert jsonpointer.exists(DOC, tokens)


@pytest.mark.parametrize(
    "tokens",
    [
        ["x"],  # missing key
        ["a", "3"],  # index past the end
        ["a", "-"],  # "-" names the element after the last: never an existing node
        ["a", "01"],  # leading zero
        ["a", "00"],
        ["a", "+1"],
        ["a", " 1"],
        ["a", "1 "],
        ["a", "-1"],
        ["a", "\u0661"],  # ARABIC-INDIC DIGIT ONE: str.isdigit() is true, not an RFC 6901 index
        ["a", "\u00b9"],  # SUPERSCRIPT ONE: isdigit() true, int() fails
        ["a", ""],
        ["a", "1", "x"],  # below a number
        ["n", "x"],  # below null
        ["a", "0", "b", "c"],
    ],
)
def test_resolve_misses_what_is_not_there(tokens):
    # spec: R-DAT-005 -- a path that names no node is reported, never guessed or raised.
    assert not jsonpointer.exists(DOC, tokens)
    assert jsonpointer.resolve(DOC, tokens) is jsonpointer._MISSING


def test_index_zero_and_multi_digit_indices():
    # spec: R-DAT-005 -- "0" is an index; "10" is too (no leading zero).
    items = list(range(11))
    assert jsonpointer.resolve(items, ["0"]) == 0
    assert jsonpointer.resolve(items, ["10"]) == 10
    assert not jsonpointer.exists(items, ["11"])


@pytest.mark.parametrize(
    ("pointer", "tokens"),
    [("/~0~1", ["~/"]), ("/~1~0", ["/~"]), ("/a~0", ["a~"]), ("/~0", ["~"]), ("/a/~1", ["a", "/"])],
)
def test_split_accepts_each_escape_at_every_position(pointer, tokens):
    # spec: R-DAT-006
    assert jsonpointer.split(pointer) == tokens


@pytest.mark.parametrize(
    "pointer",
    [
        "/~", "/a~", "/~a", "/~X", "/~2", "/~0~", "/~1~2", "/ok/~", "/a~0~x",
        # a bad escape before a good one, and between two good ones: every "~" is checked
        "/~x~0", "/~0~x~0", "/~1~x~1~0",
    ],
)  # fmt: skip
def test_split_rejects_a_tilde_not_followed_by_0_or_1(pointer):
    # spec: R-DAT-005 R-DAT-006
    assert jsonpointer.split(pointer) is None
