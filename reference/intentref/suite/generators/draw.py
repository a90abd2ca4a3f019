"""Where a generator's choices come from: a Hypothesis draw or a seeded ``random.Random``.

Every generator takes a ``Draw``, a four-method source of choices: ``HypothesisDraw`` makes
each choice a native Hypothesis draw (so examples shrink towards the first option and the
smallest number), ``RandomDraw`` takes it from a seeded ``random.Random`` (so ``intentref fuzz
--seed N`` writes byte-identical files without depending on Hypothesis' internals).  What is
generated is valid *by construction*, never by filtering: data is drawn from the schema, the
input is built to contain every string value (so exact evidence holds), and each named fault
breaks a valid candidate in exactly one way and says what the reference answers.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class Draw(Protocol):
    """Where every choice of a generator comes from."""

    def integer(self, lo: int, hi: int) -> int: ...
    def boolean(self) -> bool: ...
    def choice(self, options: Sequence[T]) -> T: ...
    def text(self, alphabet: str, min_size: int, max_size: int) -> str: ...


class RandomDraw:
    """Choices from a seeded ``random.Random``: reproducible across runs and machines."""

    def __init__(self, rng: random.Random | int) -> None:
        self.rng = rng if isinstance(rng, random.Random) else random.Random(rng)

    def integer(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)

    def boolean(self) -> bool:
        return self.rng.random() < 0.5

    def choice(self, options: Sequence[T]) -> T:
        return options[self.rng.randrange(len(options))]

    def text(self, alphabet: str, min_size: int, max_size: int) -> str:
        size = self.rng.randint(min_size, max_size)
        return "".join(alphabet[self.rng.randrange(len(alphabet))] for _ in range(size))


class HypothesisDraw:
    """Choices as Hypothesis draws, so a failing example shrinks choice by choice."""

    def __init__(self, draw: Callable[[Any], Any]) -> None:
        # Imported here, not at the top: ``intentref fuzz`` draws with RandomDraw alone and
        # should not pay for importing Hypothesis (start-up cost).
        from hypothesis import strategies as st

        self._draw = draw
        self._st = st

    def integer(self, lo: int, hi: int) -> int:
        return int(self._draw(self._st.integers(lo, hi)))

    def boolean(self) -> bool:
        return bool(self._draw(self._st.booleans()))

    def choice(self, options: Sequence[T]) -> T:
        # sampled_from shrinks towards the first option: generators list the plain one first.
        result: T = self._draw(self._st.sampled_from(options))
        return result

    def text(self, alphabet: str, min_size: int, max_size: int) -> str:
        return str(self._draw(self._st.text(alphabet=alphabet, min_size=min_size, max_size=max_size)))


def subset(d: Draw, items: Sequence[T]) -> list[T]:
    """A sub-sequence of ``items`` in their order (each kept or not)."""
    return [item for item in items if d.boolean()]
