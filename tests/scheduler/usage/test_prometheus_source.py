"""The Prometheus usage source against a tiny Prometheus query API served by this test.

The server answers ``GET /api/v1/query`` with Prometheus' JSON: the cluster's GPU
capacity sum, the per-queue allocation sums (label ``queue_name``), and an empty
vector for CPU and memory allocation. It keeps the queries it was sent so the
test can check they are KAI's.
"""

from __future__ import annotations

import argparse
import json
import threading
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from scheduler.cache.snapshotting import build_snapshot
from scheduler.config import ConfigError
from scheduler.live.main import config_from
from scheduler.live.usage_feed import UsageFeed
from scheduler.usage.params import UsageDBConfig, UsageParams
from scheduler.usage.prometheus import PrometheusUsage, UsageQueryError, window_query

NOW = 1_767_571_200.0  # 2026-01-05T00:00:00Z


def vector(*samples: tuple[dict[str, str], float]) -> dict[str, Any]:
    return {
        "status": "success",
        "data": {
            "resultType": "vector",
            "result": [{"metric": m, "value": [NOW, str(v)]} for m, v in samples],
        },
    }


class FakePrometheus(BaseHTTPRequestHandler):
    queries: list[dict[str, str]] = []
    refuse = False

    def do_GET(self) -> None:
        url = urllib.parse.urlparse(self.path)
        args = {k: v[0] for k, v in urllib.parse.parse_qs(url.query).items()}
        type(self).queries.append(args)
        query = args.get("query", "")
        status = 200
        if url.path != "/api/v1/query":
            status, body = 404, {"status": "error", "error": "not found"}
        elif type(self).refuse:
            status = 400
            body = {"status": "error", "errorType": "bad_data", "error": "parse error"}
        elif "kube_node_status_capacity" in query:
            # 16 GPUs for the whole window, sampled each minute: 16 · 240 samples
            body = vector(({}, 16 * 240.0)) if "nvidia_com_gpu" in query else vector(({}, 1.0))
        elif "kai_queue_allocated_gpus" in query:
            body = vector(({"queue_name": "heavy"}, 12 * 240.0), ({"queue_name": "light"}, 960.0))
        else:
            body = vector()
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def prometheus() -> Iterator[str]:
    FakePrometheus.queries = []
    FakePrometheus.refuse = False
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakePrometheus)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_usage_is_allocation_over_capacity(prometheus: str) -> None:
    # heavy: 12 of 16 GPUs over the window → 0.75; light: 960 / 3840 = 0.25
    source = PrometheusUsage(prometheus, UsageParams(window_size_s=4 * 3600.0))
    usage = source.fetch(NOW)
    assert usage == {"heavy": (0.75, 0.0, 0.0), "light": (0.25, 0.0, 0.0)}
    sent = [q["query"] for q in FakePrometheus.queries]
    assert (
        'sum_over_time((sum(kube_node_status_capacity{resource="nvidia_com_gpu"}))[14400s:60s])'
        in sent
    )
    assert "sum_over_time((kai_queue_allocated_gpus)[14400s:60s])" in sent
    assert "sum_over_time((kai_queue_allocated_cpu_cores)[14400s:60s])" in sent
    assert "sum_over_time((kai_queue_allocated_memory_bytes)[14400s:60s])" in sent
    assert {q["time"] for q in FakePrometheus.queries} == {f"{NOW:.3f}"}


def test_half_life_adds_kais_decay_factor(prometheus: str) -> None:
    params = UsageParams(window_size_s=3600.0, half_life_s=600.0, query_resolution_s=30.0)
    PrometheusUsage(prometheus, params).fetch(NOW)
    sent = [q["query"] for q in FakePrometheus.queries]
    decay = f"(0.5^(({int(NOW)} - time()) / 600.000000))"
    assert f"sum_over_time((((kai_queue_allocated_gpus) * {decay}))[3600s:30s])" in sent


def test_metric_overrides_are_queried(prometheus: str) -> None:
    params = UsageParams(
        allocation_metrics=("my_gpus", "my_cpu", "my_memory"),
        capacity_metrics=(
            'sum(kube_node_status_capacity{resource="nvidia_com_gpu"})',
            "sum(kube_node_status_capacity{resource='cpu'})",
            "sum(kube_node_status_capacity{resource='memory'})",
        ),
    )
    PrometheusUsage(prometheus, params).fetch(NOW)
    assert any("my_gpus" in q["query"] for q in FakePrometheus.queries)


def test_tumbling_window_queries_since_the_reset(prometheus: str) -> None:
    # windows of 1 day from 2026-01-04T18:00Z; at NOW (Jan 5 00:00) the window is 6 hours
    params = UsageParams(
        window_size_s=86400.0, window_type="tumbling", tumbling_start_s=NOW - 6 * 3600.0
    )
    assert window_query("m", params, NOW) == "sum_over_time((m)[21600s:60s])"
    # a window reset exactly now is empty: no query, no usage
    fresh = UsageParams(window_type="tumbling", tumbling_start_s=NOW)
    assert window_query("m", fresh, NOW) is None
    assert PrometheusUsage(prometheus, fresh).fetch(NOW) == {}


def test_a_refused_query_is_an_error_naming_it(prometheus: str) -> None:
    FakePrometheus.refuse = True
    with pytest.raises(UsageQueryError, match=r"refused .*kube_node_status_capacity.*parse error"):
        PrometheusUsage(prometheus, UsageParams()).fetch(NOW)


def test_an_unreachable_prometheus_is_an_error() -> None:
    source = PrometheusUsage("http://127.0.0.1:9", UsageParams(query_timeout_s=2.0))
    with pytest.raises(UsageQueryError, match=r"querying http://127\.0\.0\.1:9"):
        source.fetch(NOW)


def test_a_url_must_be_http() -> None:
    with pytest.raises(ValueError, match="must be http"):
        PrometheusUsage("prometheus:9090", UsageParams())


def test_the_live_feed_fills_snapshots_with_the_latest_answer(prometheus: str) -> None:
    feed = UsageFeed(UsageDBConfig(client_type="prometheus", connection_string=prometheus))
    empty = build_snapshot([], now=NOW).snapshot
    feed.fill(empty)
    assert empty.queue_usage == {}  # nothing fetched yet: no usage
    feed.refresh_once(NOW)
    feed.fill(empty)
    assert empty.queue_usage["heavy"] == (0.75, 0.0, 0.0)
    FakePrometheus.refuse = True
    feed.refresh_once(NOW + 60)  # a failed refresh keeps the previous answer
    feed.fill(empty)
    assert empty.queue_usage["light"] == (0.25, 0.0, 0.0)


def test_the_flag_makes_the_config_read_prometheus(tmp_path: Path) -> None:
    config_file = tmp_path / "config.yaml"
    config_file.write_text("usageDBConfig: {usageParams: {windowSize: 2h}}\n")
    args = argparse.Namespace(
        config=str(config_file), usage_prometheus_url="http://prom:9090", scheduler_name=None
    )
    usage = config_from(args).usage_db
    assert usage is not None
    assert (usage.client_type, usage.connection_string) == ("prometheus", "http://prom:9090")
    assert usage.params.window_size_s == 7200  # the file's usageParams still apply
    config_file.write_text("usageDBConfig: {clientType: prometheus}\n")
    args.usage_prometheus_url = ""
    with pytest.raises(ConfigError, match="needs an http"):
        config_from(args)
