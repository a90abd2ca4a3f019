"""Decision variants made inside the core: how candidates are judged, and the limits.

Each variant switches fields of ``intentref.choices.Choices`` that the core reads where the
decision is applied (see ``variants.Variant``).
"""

from __future__ import annotations

from .variants import Variant

VARIANTS: tuple[Variant, ...] = ()
