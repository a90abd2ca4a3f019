"""What counts as blank text: one definition for every "non-blank" rule (D-TXT-001).

The seeds' runtime is JavaScript, where ``String.prototype.trim`` and the regex ``\\s``
use ECMA-262 WhiteSpace and LineTerminator.  Python's ``str.strip`` differs (it also
strips U+001C..U+001F and U+0085, and keeps U+FEFF), so the set is spelled out here and
shared with the ``\\S`` patterns of the intent_core schema, which validators evaluate
with ECMA-262 semantics.
"""

from __future__ import annotations

from typing import Final

ECMA_WHITESPACE: Final = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)


def has_text(value: object) -> bool:
    """True for a string holding at least one character that is not ECMA-262 white space."""
    return isinstance(value, str) and bool(value.strip(ECMA_WHITESPACE))
