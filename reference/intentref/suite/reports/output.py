"""Report files: whether one can be written (asked before a run starts), and every report's JSON text."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

PathLike = str | os.PathLike[str]


def output_problem(path: PathLike) -> str | None:
    """Why a report cannot be written at ``path``, or None: checked before a run starts, so a
    mistyped folder costs nothing and no run's results are lost to it (D-CNF-013)."""
    target = Path(path)
    folder = target.parent
    if target.is_dir():
        return "is a folder"
    if not folder.is_dir():
        return f"folder {str(folder)!r} does not exist" if not folder.exists() else f"{str(folder)!r} is not a folder"
    if target.exists() and not os.access(target, os.W_OK):
        return "cannot be written (permission denied)"
    if not target.exists() and not os.access(folder, os.W_OK | os.X_OK):
        return f"folder {str(folder)!r} cannot be written to (permission denied)"
    return None


def write_text(path: PathLike, text: str) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as handle:
        handle.write(text)


def write_json(path: PathLike, document: dict[str, Any], indent: int = 2) -> None:
    write_text(path, json.dumps(document, ensure_ascii=False, indent=indent, allow_nan=False) + "\n")
