"""A stand-in that reads a blank quote as an empty one: ``plain_sdk_server.py`` with one rule bent.

    python tests/outside/blank_quote_server.py --config FILE

Seed 000 (data 候选) asks every source's ``quote`` to be non-empty (非空) and to occur in its
source; only ``explanation`` and ``message`` must not be blank text (不能为空白文字). An
implementation that applies the blank-text rule to quotes too refuses a quote of one space
that its source holds. This server is that implementation: before its Bridge sees a
candidate, every quote that is only white space is emptied, so the reference's own check
refuses it as an empty quote. ``tests/conformance/test_sdk_pitfalls.py`` checks that a
normative case catches it. Not part of the ``intentref`` package.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import plain_sdk_server  # this folder is the script's own, first on sys.path


class BlankQuoteAsEmpty:
    """A Bridge session whose accept reads a blank quote as an empty one."""

    def __init__(self, session: Any) -> None:
        self._session = session
        self.prepare = session.prepare
        self.cancel = session.cancel
        self.close = session.close

    def accept(self, request: dict[str, Any]) -> Any:
        try:
            candidate = json.loads(request.get("candidateText", ""))
        except (TypeError, ValueError):
            return self._session.accept(request)
        for entry in _entries(candidate):
            for source in entry.get("sources") or []:
                if isinstance(source, dict) and isinstance(source.get("quote"), str) and not source["quote"].strip():
                    source["quote"] = ""
        return self._session.accept({**request, "candidateText": json.dumps(candidate, ensure_ascii=False)})


def _entries(candidate: Any) -> list[dict[str, Any]]:
    if not isinstance(candidate, dict):
        return []
    lists = (candidate.get("evidence"), candidate.get("descriptionChecks"))
    return [entry for entries in lists if isinstance(entries, list) for entry in entries if isinstance(entry, dict)]


if __name__ == "__main__":
    plain_build = plain_sdk_server.build_server
    plain_sdk_server.build_server = lambda session: plain_build(BlankQuoteAsEmpty(session))
    sys.exit(plain_sdk_server.main())
