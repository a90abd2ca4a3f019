"""The matrix's badges: a flat SVG per implementation, its normative cases passed over asked."""

from __future__ import annotations

import html
from typing import Any

from intentref.suite.cases.script import ERRORED, FAILED, PASSED, UNSUPPORTED


def _text_width(text: str) -> int:
    return 7 * len(text) + 10  # Verdana 11px averages under 7 px a character


def badge(label: str, value: str, colour: str) -> str:
    """A flat two-part SVG badge (our own drawing: no font metrics needed at this size)."""
    left, right = _text_width(label), _text_width(value)
    total = left + right
    e_label, e_value = html.escape(label), html.escape(value)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{total}" height="20" role="img" '
        f'aria-label="{e_label}: {e_value}"><title>{e_label}: {e_value}</title>'
        f'<rect width="{left}" height="20" fill="#555"/><rect x="{left}" width="{right}" height="20" fill="{colour}"/>'
        f'<g fill="#fff" text-anchor="middle" font-family="Verdana,DejaVu Sans,sans-serif" font-size="11">'
        f'<text x="{left / 2}" y="14">{e_label}</text><text x="{left + right / 2}" y="14">{e_value}</text></g></svg>\n'
    )


def badge_for(summary: dict[str, Any]) -> str:
    n = summary["normative"]
    ran = n["total"] - n[UNSUPPORTED]
    colour = "#4c1" if n[FAILED] == 0 and n[ERRORED] == 0 and ran > 0 else ("#dfb317" if n[PASSED] else "#e05d44")
    return badge("intent-runtime normative", f"{n[PASSED]}/{ran}", colour)


def file_name(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "-" for c in name).strip("-") or "implementation"
