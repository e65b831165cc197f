"""``usageDBConfig`` parsing, the built-in history, and the live feed's built-in source."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from scheduler.cache.snapshotting import build_snapshot
from scheduler.config import ConfigError, load_config
from scheduler.live.usage_feed import UsageFeed
from scheduler.usage.given import parse_given_usage
from scheduler.usage.history import UsageHistory
from scheduler.usage.params import UsageDBConfig, UsageParams, parse_usage_db_config
from tests.kits.worlds import NOW, job, node, queue, sourced

H = 3600.0


def test_kai_shaped_config_is_read() -> None:
    config = load_config(
        {
            "plugins": {"proportion": {"arguments": {"kValue": 0.5}}},
            "usageDBConfig": {
                "clientType": "prometheus",
                "connectionString": "http://prometheus-operated.kai-scheduler:9090",
                "usageParams": {
                    "windowSize": "1w",
                    "windowType": "cron",
                    "cronString": "0 0 * * 1",
                    "halfLifePeriod": "10m",
                    "fetchInterval": "30s",
                    "extraParams": {"gpuAllocationMetric": "x", "queryResolution": "2m"},
                },
            },
        }
    )
    assert config.k_value == 0.5
    usage = config.usage_db
    assert usage is not None
    assert usage.client_type == "prometheus"
    assert usage.params.window_size_s == 7 * 86400
    assert usage.params.half_life_s == 600
    assert usage.params.fetch_interval_s == 30
    assert usage.params.staleness_s == 300  # KAI's default
    assert usage.params.query_resolution_s == 120
    assert usage.params.allocation_metrics[0] == "x"


def test_defaults_are_kais() -> None:
    usage = parse_usage_db_config({})
    assert usage.client_type == "builtin"
    assert usage.params == UsageParams()
    assert (usage.params.window_size_s, usage.params.window_type) == (7 * 86400, "sliding")
    assert usage.params.half_life_s is None
    # a zero half life turns decay off, as in KAI
    zero = parse_usage_db_config({"usageParams": {"halfLifePeriod": "0s"}})
    assert zero.params.half_life_s is None


def test_connection_string_from_the_environment() -> None:
    raw = {"clientType": "prometheus", "connectionStringEnvVar": "PROM"}
    assert parse_usage_db_config(raw, {"PROM": "http://p:9090"}).connection_string == (
        "http://p:9090"
    )


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"clientType": "influx"}, "usageDBConfig.clientType: must be one of"),
        ({"usageParams": {"windowSize": "a week"}}, "usageDBConfig.usageParams.windowSize"),
        ({"usageParams": {"windowType": "hopping"}}, "usageParams.windowType: must be one of"),
        ({"usageParams": {"windowType": "tumbling"}}, "tumblingWindowStartTime: required"),
        (
            {"usageParams": {"windowType": "tumbling", "tumblingWindowStartTime": "monday"}},
            "tumblingWindowStartTime: expected an RFC 3339 time",
        ),
        ({"usageParams": {"windowType": "cron"}}, "cronString: required"),
        ({"usageParams": {"windowType": "cron", "cronString": "0 0 31 2 *"}}, "never fires"),
        ({"usageParams": {"windowType": "cron", "cronString": "0 0 *"}}, "cronString: expected 5"),
        ({"usageParams": {"fetchInterval": "-1m"}}, "fetchInterval: must be positive"),
        ({"usageParams": {"extraParams": {"gpuMetric": "x"}}}, "extraParams.gpuMetric: unknown"),
        ({"usageParams": {"extraParams": {"cpuCapacityMetric": ""}}}, "expected a PromQL"),
        ({"usageParams": {"windowsize": "1h"}}, "usageParams.windowsize: unknown key"),
        (
            {"connectionString": "http://a", "connectionStringEnvVar": "B"},
            "connectionString or connectionStringEnvVar, not both",
        ),
        ({"connectionStringEnvVar": "UNSET_VARIABLE"}, "UNSET_VARIABLE is not set"),
        ({"historyFile": 3}, "historyFile: expected a file path"),
    ],
)
def test_bad_usage_config_names_the_key(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config({"usageDBConfig": raw})


# --- the built-in history --------------------------------------------------------------
def test_history_records_steps_and_drops_what_no_window_reaches() -> None:
    history = UsageHistory(UsageParams(window_size_s=2 * H))
    cap = (8.0, 0.0, 0.0)
    history.record(0.0, {"a": (8.0, 0.0, 0.0)}, cap)
    history.record(0.5 * H, {"a": (8.0, 0.0, 0.0)}, cap)  # unchanged: not kept twice
    history.record(1 * H, {"a": (4.0, 0.0, 0.0)}, cap)
    history.record(0.2 * H, {"a": (0.0, 0.0, 0.0)}, cap)  # earlier than the last: ignored
    assert [s.at for s in history.samples] == [0.0, 1 * H]
    # at 2h: (8·1 + 4·1) / (8·2) = 0.75
    assert history.usage(2 * H)["a"][0] == pytest.approx(0.75)
    history.record(3.5 * H, {"a": (0.0, 0.0, 0.0)}, cap)
    # the window from 3.5h starts at 1.5h: the sample from 0h ended at 1h and is gone
    assert [s.at for s in history.samples] == [1 * H, 3.5 * H]
    # at 3.5h: [1.5h, 3.5h] a held 4 until 3.5h: 4·2 / (8·2) = 0.5
    assert history.usage(3.5 * H)["a"][0] == pytest.approx(0.5)


def test_history_survives_a_file_round_trip(tmp_path: Path) -> None:
    params = UsageParams(window_size_s=2 * H)
    history = UsageHistory(params)
    history.record(0.0, {"a": (2.0, 1000.0, 1e9)}, (8.0, 4000.0, 4e9))
    path = str(tmp_path / "usage.json")
    history.save(path)
    again = UsageHistory.load(path, params)
    assert again.usage(H) == history.usage(H) == {"a": (0.25, 0.25, 0.25)}
    assert UsageHistory.load(str(tmp_path / "missing.json"), params).samples == []


def test_a_broken_history_file_is_named(tmp_path: Path) -> None:
    path = tmp_path / "usage.json"
    path.write_text(json.dumps({"version": 1, "samples": [{"at": 0}]}))
    with pytest.raises(ValueError, match=r"usage\.json: not a usage history"):
        UsageHistory.load(str(path), UsageParams())


# --- the live feed with the built-in source ----------------------------------------------
def _snapshot(now: float, running: bool) -> Any:
    states = ["Running"] if running else ["Pending"]
    objects = [
        node("n0", gpus=4),
        queue("a", gpu_weight=1),
        queue("b", gpu_weight=1),
        job("a0", "a", 2, gpus=1, states=states * 2, nodes=["n0"] * 2 if running else None),
    ]
    return build_snapshot(sourced(objects), now=now).snapshot


def test_builtin_feed_records_each_snapshot_and_fills_the_next(tmp_path: Path) -> None:
    path = str(tmp_path / "usage.json")
    config = UsageDBConfig(params=UsageParams(window_size_s=2 * H), history_file=path)
    feed = UsageFeed(config)
    start = NOW.timestamp()
    first = _snapshot(start, running=True)
    feed.fill(first)
    assert first.queue_usage == {}  # nothing has been held for any time yet
    later = _snapshot(start + H, running=False)
    feed.fill(later)
    # a held 2 of 4 GPUs for the hour recorded: 0.5; b held nothing
    assert later.queue_usage["a"][0] == pytest.approx(0.5)
    assert later.queue_usage["b"] == (0.0, 0.0, 0.0)
    # the record was written and a restarted feed carries on from it
    restarted = UsageFeed(config)
    again = _snapshot(start + 2 * H, running=False)
    restarted.fill(again)
    assert again.queue_usage["a"][0] == pytest.approx(0.25)  # (2·1 + 0·1) / (4·2)


def test_builtin_feed_starts_fresh_from_a_broken_file(tmp_path: Path) -> None:
    path = tmp_path / "usage.json"
    path.write_text("{not json")
    feed = UsageFeed(UsageDBConfig(history_file=str(path)))
    assert feed.history is not None
    assert feed.history.samples == []


# --- usage given as input ------------------------------------------------------------------
def test_given_usage_file() -> None:
    data = {"usage": {"a": {"gpu": 0.5}, "b": {"cpu": 0.1, "memory": 0.2}}}
    assert parse_given_usage(data, "u.yaml") == {"a": (0.5, 0.0, 0.0), "b": (0.0, 0.1, 0.2)}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"queues": {}}, "u.yaml: expected one top-level key, usage"),
        ({"usage": ["a"]}, "u.yaml: usage: expected a mapping"),
        ({"usage": {"a": 0.5}}, "u.yaml: usage.a: expected a mapping"),
        ({"usage": {"a": {"gpus": 0.5}}}, "usage.a.gpus: unknown resource"),
        ({"usage": {"a": {"gpu": -1}}}, "usage.a.gpu: expected a number >= 0"),
        ({"usage": {"a": {"gpu": "lots"}}}, "usage.a.gpu: expected a number >= 0"),
    ],
)
def test_bad_given_usage_names_the_entry(data: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_given_usage(data, "u.yaml")


def test_a_feed_that_ran_no_cycle_leaves_the_file_alone(tmp_path: Path) -> None:
    """A replica that never led (never filled a snapshot) must not overwrite the record."""
    path = tmp_path / "usage.json"
    history = UsageHistory(UsageParams())
    history.record(0.0, {"a": (1.0, 0.0, 0.0)}, (4.0, 0.0, 0.0))
    history.save(str(path))
    before = path.read_text()
    feed = UsageFeed(UsageDBConfig(history_file=str(path)))
    feed.history = UsageHistory(UsageParams())  # whatever it holds, it recorded nothing
    feed.save(NOW.timestamp())
    assert path.read_text() == before


def test_changes_within_one_resolution_step_count_from_the_steps_start() -> None:
    # resolution 1m: a at 0 s holds 8; at 30 s it drops to 0 (replaces the 0 s sample's
    # values, as Prometheus would only see the 0 value at the next step); at 90 s 4.
    history = UsageHistory(UsageParams(window_size_s=H, query_resolution_s=60.0))
    cap = (8.0, 0.0, 0.0)
    history.record(0.0, {"a": (8.0, 0.0, 0.0)}, cap)
    history.record(30.0, {"a": (0.0, 0.0, 0.0)}, cap)
    history.record(90.0, {"a": (4.0, 0.0, 0.0)}, cap)
    assert [(s.at, s.allocation["a"][0]) for s in history.samples] == [(0.0, 0.0), (90.0, 4.0)]
    # at 180 s: (0·90 + 4·90) / (8·180) = 0.25
    assert history.usage(180.0)["a"][0] == pytest.approx(0.25)


def test_refreshed_usage_is_recomputed_once_per_fetch_interval() -> None:
    history = UsageHistory(UsageParams(window_size_s=H, fetch_interval_s=60.0))
    cap = (8.0, 0.0, 0.0)
    history.record(0.0, {"a": (8.0, 0.0, 0.0)}, cap)
    assert history.refreshed_usage(100.0)["a"][0] == 1.0
    history.record(120.0, {"a": (0.0, 0.0, 0.0)}, cap)
    # 140 s is within a minute of the last refresh (100 s): the answer stays 1.0
    assert history.refreshed_usage(140.0)["a"][0] == 1.0
    # at 200 s it is recomputed: 8·120 / (8·200) = 0.6
    assert history.refreshed_usage(200.0)["a"][0] == pytest.approx(0.6)
