"""BridgeConfig checking (spec: R-CAP-001, R-CAP-003, R-CAP-014, R-CAP-015, D-BRG-014)."""

from __future__ import annotations

from typing import Any

import pytest
from bridge_helpers import make_bridge, order_intent

from intentref import IntentParseError
from intentref.bridge import create_intent_bridge
from intentref.core.limits import DEFAULT_MAX_JOBS, DEFAULT_MAX_REPLAY_BYTES, DEFAULT_MAX_REPLAY_ENTRIES

CAPACITY = ["maxJobs", "maxReplayEntries", "maxReplayBytes"]
TTLS = ["jobTtlMs", "replayTtlMs"]
NOT_OPTIONS: list[Any] = [-1, 2147483648, 2**53, 1.5, 3.0, True, False, "3", None, [1]]


def _config_error(config: Any) -> dict[str, Any]:
    with pytest.raises(IntentParseError) as caught:
        create_intent_bridge(config)
    err = caught.value
    assert err.code == "CONFIG_INVALID" and err.stage == "config"
    assert len(err.issues) == 1
    return err.to_json()


@pytest.mark.parametrize("name", CAPACITY)
@pytest.mark.parametrize("value", [0, *NOT_OPTIONS])
def test_capacity_options_must_be_positive_integers_in_range(name: str, value: Any) -> None:
    serialized = _config_error({"instances": {"default": order_intent()}, name: value})
    assert serialized["issues"][0]["path"] == f"/{name}"


@pytest.mark.parametrize("name", TTLS)
@pytest.mark.parametrize("value", NOT_OPTIONS)
def test_ttls_must_be_integers_in_range(name: str, value: Any) -> None:
    serialized = _config_error({"instances": {"default": order_intent()}, name: value})
    assert serialized["issues"][0]["path"] == f"/{name}"


@pytest.mark.parametrize("name", CAPACITY + TTLS)
def test_the_largest_timer_value_is_accepted(name: str) -> None:
    options: dict[str, Any] = {name: 2147483647}
    bridge = make_bridge(**options)
    assert getattr(bridge.options, _snake(name)) == 2147483647
    assert bridge.connect().prepare({"instance": "default", "input": "查询订单 000123"})["kind"] == "task"


@pytest.mark.parametrize("name", TTLS)
def test_ttl_zero_is_accepted(name: str) -> None:
    options: dict[str, Any] = {name: 0}
    assert getattr(make_bridge(**options).options, _snake(name)) == 0


def test_defaults() -> None:
    options = make_bridge().options
    assert (options.max_jobs, options.max_replay_entries, options.max_replay_bytes) == (
        DEFAULT_MAX_JOBS,
        DEFAULT_MAX_REPLAY_ENTRIES,
        DEFAULT_MAX_REPLAY_BYTES,
    )
    assert (options.job_ttl_ms, options.replay_ttl_ms) == (0, 0)  # spec: R-CAP-003


@pytest.mark.parametrize(
    ("config", "path"),
    [
        ({"instances": {"default": order_intent()}, "maxjobs": 3}, "/maxjobs"),
        ({"instances": {"default": order_intent()}, "transport": None}, "/transport"),
        ({"instances": {"default": order_intent()}, "a/b": 1}, "/a~1b"),
        ({}, "/instances"),
        ({"instances": {}}, "/instances"),
        ({"instances": [order_intent()]}, "/instances"),
        ({"instances": {"default": {"language": "zh-CN"}}}, "/instances/default"),
        ({"instances": {1: order_intent()}}, "/instances"),
        ([], ""),
        (None, ""),
    ],
)
def test_malformed_configs(config: Any, path: str) -> None:
    assert _config_error(config)["issues"][0]["path"] == path


def test_the_config_dict_is_copied() -> None:
    instances = {"default": order_intent()}
    bridge = create_intent_bridge({"instances": instances})
    instances.clear()
    assert bridge.connect().prepare({"instance": "default", "input": "查询订单 000123"})["kind"] == "task"


def _snake(name: str) -> str:
    return {
        "maxJobs": "max_jobs",
        "maxReplayEntries": "max_replay_entries",
        "maxReplayBytes": "max_replay_bytes",
        "jobTtlMs": "job_ttl_ms",
        "replayTtlMs": "replay_ttl_ms",
    }[name]
