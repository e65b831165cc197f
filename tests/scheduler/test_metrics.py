"""Metrics registry: the Prometheus text format, KAI's names, and the HTTP endpoint."""

from __future__ import annotations

import asyncio

import pytest

from scheduler import metrics
from scheduler.metrics.families import Metrics
from scheduler.metrics.registry import Registry
from scheduler.metrics_http import CONTENT_TYPE, MetricsServer, respond


def test_text_format_of_counter_gauge_histogram() -> None:
    reg = Registry()
    c = reg.add("jobs_total", "Jobs\nseen", "counter", ("kind",))
    g = reg.add("temp", 'A "gauge"', "gauge")
    h = reg.add("lat_ms", "Latency", "histogram", buckets=(10, 5))
    c.inc(2, kind='a"b\\c')
    g.set(1.5)
    for v in (3, 7, 100):
        h.observe(v)
    assert reg.render() == (
        "# HELP jobs_total Jobs\\nseen\n"
        "# TYPE jobs_total counter\n"
        'jobs_total{kind="a\\"b\\\\c"} 2\n'
        '# HELP temp A "gauge"\n'
        "# TYPE temp gauge\n"
        "temp 1.5\n"
        "# HELP lat_ms Latency\n"
        "# TYPE lat_ms histogram\n"
        'lat_ms_bucket{le="5"} 1\n'
        'lat_ms_bucket{le="10"} 2\n'
        'lat_ms_bucket{le="+Inf"} 3\n'
        "lat_ms_sum 110\n"
        "lat_ms_count 3\n"
    )


def test_labels_must_match_and_counters_only_grow() -> None:
    reg = Registry()
    c = reg.add("x_total", "x", "counter", ("a",))
    with pytest.raises(ValueError, match="labels"):
        c.inc(1)
    with pytest.raises(ValueError, match="decrease"):
        c.inc(-1, a="1")
    with pytest.raises(ValueError, match="twice"):
        reg.add("x_total", "x", "counter")


def test_scheduler_helpers_use_kai_names() -> None:
    m = Metrics(Registry())
    metrics.observe_cycle(12.5, {"allocate": 10.0, "reclaim": 1.0}, open_session_ms=2.0, metrics=m)
    metrics.count_binds(3, metrics=m)
    metrics.count_evictions(2, action="reclaim", podgroup="pg", uid="u", metrics=m)
    metrics.set_queue_shares({"q": {"gpu": 2.0, "cpu": 1500.0, "memory": 2e9}}, metrics=m)
    m.set_queues({"q": {"gpu": -1, "cpu": 2, "memory": 1e9}}, {"q": {"gpu": 0.5}})
    text = m.registry.render()
    for line in (
        "kai_e2e_scheduling_latency_milliseconds 12.5",
        'kai_action_scheduling_latency_milliseconds{action="allocate"} 10',
        "kai_open_session_latency_milliseconds 2",
        "podmuster_bind_requests_created_total 3",
        'kai_pod_group_evicted_pods_total{podgroup="pg",uid="u",nodepool="default",action="reclaim"} 2',
        'kai_queue_fair_share_gpu{queue_name="q"} 2',
        'kai_queue_fair_share_cpu_cores{queue_name="q"} 1.5',
        'kai_queue_fair_share_memory_gb{queue_name="q"} 2',
        'kai_queue_deserved_gpus{queue_name="q"} -1',
        'kai_queue_allocated_gpus{queue_name="q"} 0.5',
        'kai_queue_allocated_memory_bytes{queue_name="q"} 0',
        'kai_queue_info{queue_name="q"} 1',
        "# TYPE kai_task_bind_latency_milliseconds histogram",
    ):
        assert line in text.splitlines(), line
    metrics.set_queue_shares({}, metrics=m)
    assert 'queue_name="q"} 2' not in m.registry["kai_queue_fair_share_gpu"].render()


def test_respond_routes() -> None:
    assert respond("GET /metrics HTTP/1.1", lambda: "x 1\n") == (200, CONTENT_TYPE, b"x 1\n")
    assert respond("GET /healthz HTTP/1.1", str)[0] == 200
    assert respond("GET /nope HTTP/1.1", str)[0] == 404
    assert respond("POST /metrics HTTP/1.1", str)[0] == 405


def test_server_serves_metrics() -> None:
    async def scrape() -> bytes:
        server = MetricsServer(lambda: "up 1\n", port=0, host="127.0.0.1")
        await server.start()
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            await writer.drain()
            data = await reader.read()
            writer.close()
            await writer.wait_closed()
            return data
        finally:
            await server.stop()

    data = asyncio.run(scrape())
    assert data.startswith(b"HTTP/1.1 200 OK\r\n")
    assert data.endswith(b"\r\n\r\nup 1\n")


def test_observe_result_reads_a_cycle_result() -> None:
    from scheduler.cycle import Bind, CycleResult, Eviction, QueueSummary

    zero = (0.0, 0.0, 0.0)
    result = CycleResult(
        binds=[Bind("ns/a", "n1"), Bind("ns/b", "n1")],
        evictions=[Eviction("ns/c", "reclaim", "ns/pg"), Eviction("ns/d", "reclaim", None)],
        queues=[QueueSummary("q", None, zero, (1.5, 2000.0, 3e9), zero, zero, zero)],
    )
    m = Metrics(Registry())
    metrics.observe_result(result, 42.0, {"allocate": 40.0}, metrics=m)
    assert m.scheduler_binds.get() == 2
    assert m.evicted_pods.get(podgroup="", uid="", nodepool="default", action="reclaim") == 2
    assert m.fair_share["gpu"].get(queue_name="q") == 1.5
    assert m.fair_share["cpu"].get(queue_name="q") == 2.0
    assert m.fair_share["memory"].get(queue_name="q") == 3.0
    assert m.e2e.get() == 42.0
    assert m.action.get(action="allocate") == 40.0


def test_start_for_a_busy_port_logs_and_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    from scheduler.metrics_http import start_for

    async def main() -> None:
        first = await start_for(lambda: "", 0)
        second = await start_for(lambda: "", first.port)  # already taken
        off = await start_for(lambda: "", -1)
        for server in (first, second, off):
            await server.stop()

    asyncio.run(main())
    assert "metrics endpoint on port" in caplog.text
