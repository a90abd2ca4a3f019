"""Decision variants made inside the Bridge: capacity, reclamation, sessions, the legacy TTLs.

Each variant switches fields of ``intentref.choices.Choices`` that the Bridge reads where the
decision is applied, or rewrites calls at the boundary (see ``variants.Variant``).
"""

from __future__ import annotations

from .variants import Variant

VARIANTS: tuple[Variant, ...] = ()
