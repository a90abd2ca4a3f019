"""RFC 6901 JSON Pointers, as issue and candidate paths use them (spec: R-DAT-005, R-DAT-006, R-ERR-015).

Hand-written rather than taken from the ``jsonpointer`` package: we need only the two
escaping functions and a strict parser that reports malformed pointers as values, and
the package resolves against documents with its own exceptions.
"""

from __future__ import annotations

from collections.abc import Iterable


def escape_token(key: str) -> str:
    # "~" first: escaping "/" first would turn "/" into "~1" and then into "~01".
    return key.replace("~", "~0").replace("/", "~1")


def unescape_token(token: str) -> str:
    # "~1" first, the mirror image of escape_token: "~01" must become "~1", not "/".
    return token.replace("~1", "/").replace("~0", "~")


def join(tokens: Iterable[str | int]) -> str:
    return "".join("/" + escape_token(str(t)) for t in tokens)


def split(pointer: str) -> list[str] | None:
    """The unescaped tokens of ``pointer``, or None when it is not a valid pointer."""
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        return None
    tokens = pointer[1:].split("/")
    for token in tokens:
        # A "~" must start "~0" or "~1"; anything else is not an RFC 6901 pointer.
        i = token.find("~")
        while i != -1:
            if i + 1 >= len(token) or token[i + 1] not in "01":
                return None
            i = token.find("~", i + 2)
    return [unescape_token(t) for t in tokens]


_MISSING = object()


def resolve(document: object, tokens: list[str]) -> object:
    """The node at ``tokens`` in ``document``, or the module's _MISSING sentinel."""
    node = document
    for token in tokens:
        if isinstance(node, dict):
            if token not in node:
                return _MISSING
            node = node[token]
        elif isinstance(node, list):
            # RFC 6901 array indices: "0" or no leading zero, digits only.
            if not token.isdigit() or (len(token) > 1 and token[0] == "0") or not token.isascii():
                return _MISSING
            index = int(token)
            if index >= len(node):
                return _MISSING
            node = node[index]
        else:
            return _MISSING
    return node


def exists(document: object, tokens: list[str]) -> bool:
    return resolve(document, tokens) is not _MISSING
