"""Texts: one alphabet per UTF-8 width, words and sentences, JSON Pointer keys, byte-exact details, tokens."""

from __future__ import annotations

from typing import Final

from intentref.suite.generators.draw import Draw

# One alphabet per UTF-8 width, so byte limits can be hit with every kind of character.
ONE_BYTE: Final = "abcdefghijklmnopqrstuvwxyz0123456789"
TWO_BYTES: Final = "éßøжλ"
THREE_BYTES: Final = "中文订单号€✓"
FOUR_BYTES: Final = "𝄞😀🀄𠀋"
WORD: Final = ONE_BYTE + TWO_BYTES + THREE_BYTES + FOUR_BYTES
# Keys also get the characters JSON Pointer escaping is about.
KEY_CHARS: Final = ONE_BYTE[:8] + "~/ 中😀"
# Keys every schema generator reaches first: the escaping edge cases (spec: R-DAT-006).
SPECIAL_KEYS: Final = ("~", "/", "~1", "", "~0", "a/b", "m~n", "~01", "/~", "~~", "//")
# Never in any generated text: a quote made of it is in no source.
ABSENT_MARK: Final = "\u2205\u2209"
LONE_SURROGATES: Final = ("\ud800", "\udbff", "\udc00", "\udfff")
BIG: Final = 10 * 1024 * 1024  # the long profile's "10 MB texts"


def word(d: Draw, max_size: int = 10) -> str:
    """A non-blank text: every character is a non-space character."""
    return d.text(WORD, 1, max_size)


def sentence(d: Draw, max_words: int = 3) -> str:
    return " ".join(word(d, 6) for _ in range(d.integer(1, max_words)))


def key(d: Draw) -> str:
    if d.integer(0, 2) < 2:
        return d.choice(SPECIAL_KEYS)
    return d.text(KEY_CHARS, 0, 6)


def unique_keys(d: Draw, count: int) -> list[str]:
    keys: list[str] = []
    for _ in range(count):
        candidate = key(d)
        while candidate in keys:  # deterministic repair instead of a filter
            candidate += "~" if len(candidate) % 2 else "/"
        keys.append(candidate)
    return keys


# --------------------------------------------------------------------------- details and tokens


def detail_with_bytes(d: Draw, total: int, lone_surrogates: bool = True) -> str:
    """A detail of exactly ``total`` UTF-8 bytes as a TextEncoder counts them (D-LIM-006).

    Units of every width are drawn, lone surrogates included unless ``lone_surrogates`` is
    false (3 bytes each, as U+FFFD), then ``a``s fill the rest, so the boundary falls right
    after any kind of character.
    """
    units = ["a", "é", "中", "😀", *(("\ud800", "\udfff") if lone_surrogates else ())]
    parts: list[str] = []
    used = 0
    while True:
        unit = d.choice(units)
        if unit == "\udfff" and parts and parts[-1] == "\ud800":
            unit = "a"  # a high+low pair would be one 4-byte character, not two replacements
        width = len(unit.encode("utf-8", "surrogatepass"))
        if used + width > total or d.integer(0, 9) == 0:
            break
        parts.append(unit)
        used += width
    return "".join(parts) + "a" * (total - used)


def token(d: Draw) -> str:
    """A token shaped like the reference's (22 URL-safe characters, D-BRG-006 in bridge.py)."""
    return d.text("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", 22, 22)
