"""Where the shipped data lives: inside an installed wheel, or in place in a checkout."""

from __future__ import annotations

import pathlib

_PACKAGE = pathlib.Path(__file__).resolve().parent


def data_dir(name: str) -> pathlib.Path:
    """The folder ``conformance``, ``properties`` or ``spec``.

    A wheel force-includes them under ``intentref/_data``; an editable install or a plain
    checkout (``reference/intentref`` two levels below the repository root) reads the
    repository's own folders, so edits to fixtures take effect without reinstalling.
    """
    shipped = _PACKAGE / "_data" / name
    if shipped.is_dir():
        return shipped
    checkout = _PACKAGE.parent.parent / name
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(f"intentref data folder {name!r} is missing from this installation")
