"""The Bridge's public shape, in the Python spelling of seed 000 (D-CFG-003, D-BRG-017)."""

from __future__ import annotations

import inspect

import pytest

from intentref import Intent, create_intent_bridge
from intentref.bridge import BridgeClosedError, BridgeSession
from tests.bridge.bridge_helpers import CORE_TEXT, accept, prepare


def test_create_returns_connect_and_close():
    # spec: R-BRG-016 -- connect() gives a new session each time; close() returns nothing.
    intent = Intent()
    bridge = create_intent_bridge({"instances": {"default": intent}})
    first, second = bridge.connect(), bridge.connect()
    assert isinstance(first, BridgeSession) and isinstance(second, BridgeSession) and first is not second
    assert bridge.close() is None
    with pytest.raises(BridgeClosedError):
        bridge.connect()
    assert intent.disposed is False  # spec: R-BRG-017


def test_session_methods_return_replies_and_close_returns_nothing():
    # spec: R-BRG-022 -- prepare / accept / cancel answer a BridgeReply; close() nothing.
    session = create_intent_bridge({"instances": {"default": Intent()}}).connect()
    for name in ("prepare", "accept", "cancel", "close"):
        assert callable(getattr(session, name))
        # D-BRG-017: accept is synchronous in Python; a transport wraps it if it wants a coroutine.
        assert not inspect.iscoroutinefunction(getattr(session, name))
    task = prepare(session, fields=[])
    assert task["kind"] == "task"
    assert accept(session, task, CORE_TEXT)["kind"] == "result"
    assert session.cancel({"jobId": task["jobId"]})["kind"] == "result"  # the retained terminal reply
    assert session.close() is None
