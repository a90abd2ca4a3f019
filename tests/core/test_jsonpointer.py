"""RFC 6901 JSON Pointers as candidate and issue paths use them (seed 000 "data 候选", seed 004 "序列化结构")."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from intentref.core import jsonpointer

# Keys built mostly from the characters that matter, plus arbitrary text.
TRICKY = ["~", "/", "~1", "~01", "~0", "", "/~", "~/", "a/b", "m~n", "~~", "//", "0", "01"]
keys = st.sampled_from(TRICKY) | st.text(alphabet="~/01ab", max_size=8) | st.text(max_size=8)


@given(keys)
@example("~")
@example("/")
@example("~1")
@example("~01")
@example("")
def test_escape_then_unescape_is_the_identity(key):
    # spec: R-DAT-006 R-ERR-015
    token = jsonpointer.escape_token(key)
    assert jsonpointer.unescape_token(token) == key
    assert "/" not in token
    # every "~" in an escaped token starts "~0" or "~1"
    assert all(token[i + 1 : i + 2] in ("0", "1") for i, ch in enumerate(token) if ch == "~")


@given(keys)
def test_a_pointer_to_one_key_splits_back_to_that_key(key):
    pointer = "/" + jsonpointer.escape_token(key)
    assert jsonpointer.split(pointer) == [key]


def test_tilde_is_escaped_before_slash():
    # spec: R-DAT-006 R-ERR-015 -- "~" -> "~0" first, so "~1" is not read back as "/".
    assert jsonpointer.escape_token("~1") == "~01"
    assert jsonpointer.escape_token("/") == "~1"
    assert jsonpointer.escape_token("~") == "~0"
    assert jsonpointer.escape_token("a/b") == "a~1b"
    assert jsonpointer.escape_token("m~n") == "m~0n"
    assert jsonpointer.escape_token("~/") == "~0~1"
    assert jsonpointer.unescape_token("~01") == "~1"
    assert jsonpointer.unescape_token("~10") == "/0"


def test_the_seed_field_paths():
    # spec: R-ERR-015 -- the business field a/b has the path /data/a~1b.
    assert jsonpointer.join(["data", "a/b"]) == "/data/a~1b"
    assert jsonpointer.join(["data", "m~n"]) == "/data/m~0n"
    assert jsonpointer.join(["data", "items", 0, "id"]) == "/data/items/0/id"
    assert jsonpointer.split("/data/a~1b") == ["data", "a/b"]


@given(st.lists(keys | st.integers(min_value=0, max_value=99).map(str), max_size=6))
def test_join_then_split_is_the_identity(tokens):
    pointer = jsonpointer.join(tokens)
    assert jsonpointer.split(pointer) == tokens
    assert jsonpointer.join(jsonpointer.split(pointer)) == pointer
    assert pointer == "" or pointer.startswith("/")


def test_the_empty_pointer_and_the_empty_key():
    assert jsonpointer.split("") == []
    assert jsonpointer.split("/") == [""]
    assert jsonpointer.split("//") == ["", ""]
    assert jsonpointer.join([]) == ""
    assert jsonpointer.join([""]) == "/"


@pytest.mark.parametrize("pointer", ["a", "data/orderId", "/~2", "/~", "/a~", "/a~b", "~1", " /a", "/x/~3y"])
def test_invalid_pointers_split_to_none(pointer):
    # spec: R-DAT-005
    assert jsonpointer.split(pointer) is None


@given(st.text(max_size=12))
def test_split_never_raises_and_agrees_with_join(text):
    tokens = jsonpointer.split(text)
    if tokens is not None:
        assert jsonpointer.join(tokens) == text


def test_resolve_and_exists_follow_rfc6901():
    doc = {"data": {"a/b": 1, "m~n": [10, 20], "": "empty"}}
    assert jsonpointer.resolve(doc, ["data", "a/b"]) == 1
    assert jsonpointer.resolve(doc, ["data", "m~n", "1"]) == 20
    assert jsonpointer.resolve(doc, ["data", ""]) == "empty"
    assert jsonpointer.exists(doc, [])
    assert not jsonpointer.exists(doc, ["data", "m~n", "01"])  # no leading zeros
    assert not jsonpointer.exists(doc, ["data", "m~n", "2"])
    assert not jsonpointer.exists(doc, ["data", "m~n", "-"])
    assert not jsonpointer.exists(doc, ["data", "m~n", "١"])  # a non-ASCII digit is not an index
    assert not jsonpointer.exists(doc, ["data", "a/b", "x"])
    assert not jsonpointer.exists(doc, ["data", "a~1b"])  # tokens are unescaped already
