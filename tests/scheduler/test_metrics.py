"""Metrics: KAI's names, labels and types on prometheus_client, and the helpers that fill them."""

from __future__ import annotations

import re

from prometheus_client.parser import text_string_to_metric_families

from scheduler import metrics
from scheduler.metrics.families import LATENCY_BUCKETS_MS, Metrics

FAMILIES = {
    # name (as scraped, counters without _total): (type, labels)
    "kai_e2e_scheduling_latency_milliseconds": ("gauge", ()),
    "kai_open_session_latency_milliseconds": ("gauge", ()),
    "kai_close_session_latency_milliseconds": ("gauge", ()),
    "kai_action_scheduling_latency_milliseconds": ("gauge", ("action",)),
    "podmuster_scheduling_cycles": ("counter", ()),
    "podmuster_cycle_latency_milliseconds": ("histogram", ()),
    "podmuster_bind_requests_created": ("counter", ()),
    "kai_pod_group_evicted_pods": ("counter", ("podgroup", "uid", "nodepool", "action")),
    "kai_task_bind_latency_milliseconds": ("histogram", ()),
    "podmuster_binder_binds": ("counter", ("result",)),
    "podmuster_binder_gpu_reservation_pods": ("counter", ("event",)),
    "kai_queue_fair_share_gpu": ("gauge", ("queue_name",)),
    "kai_queue_fair_share_cpu_cores": ("gauge", ("queue_name",)),
    "kai_queue_fair_share_memory_gb": ("gauge", ("queue_name",)),
    "kai_queue_info": ("gauge", ("queue_name",)),
    "kai_queue_deserved_gpus": ("gauge", ("queue_name",)),
    "kai_queue_quota_cpu_cores": ("gauge", ("queue_name",)),
    "kai_queue_quota_memory_bytes": ("gauge", ("queue_name",)),
    "kai_queue_allocated_gpus": ("gauge", ("queue_name",)),
    "kai_queue_allocated_cpu_cores": ("gauge", ("queue_name",)),
    "kai_queue_allocated_memory_bytes": ("gauge", ("queue_name",)),
}


def filled() -> Metrics:
    """Every family written once, as a scheduler, binder and controller would."""
    m = Metrics()
    metrics.observe_cycle(12.5, {"allocate": 10.0, "reclaim": 1.0}, open_session_ms=2.0, metrics=m)
    metrics.observe_cycle(3000.0, close_session_ms=1.0, metrics=m)
    metrics.count_binds(3, metrics=m)
    metrics.count_evictions(2, action="reclaim", podgroup="pg", uid="u", metrics=m)
    metrics.set_queue_shares({"q": {"gpu": 2.0, "cpu": 1500.0, "memory": 2e9}}, metrics=m)
    m.set_queues({"q": {"gpu": -1, "cpu": 2, "memory": 1e9}}, {"q": {"gpu": 0.5}})
    m.bind_latency.observe(7.0)
    m.binder_results.labels(result="succeeded").inc()
    m.gpu_reservations.labels(event="created").inc()
    return m


def test_every_family_has_its_name_type_and_labels() -> None:
    scraped = {f.name: f for f in text_string_to_metric_families(filled().render())}
    for name, (kind, labels) in FAMILIES.items():
        family = scraped[name]
        assert family.type == kind, name
        assert family.samples, name
        for sample in family.samples:
            assert set(sample.labels) - {"le"} == set(labels), (name, sample.labels)
    ours = {n for n in scraped if n.startswith(("kai_", "podmuster_"))}
    assert ours == set(FAMILIES)  # nothing exported that the table (and docs) lack


def test_standard_process_metrics_and_no_created_series() -> None:
    text = filled().render()
    names = {f.name for f in text_string_to_metric_families(text)}
    assert {"process_cpu_seconds", "python_info", "python_gc_objects_collected"} <= names
    assert not re.search(r"^\w+_created[{ ]", text, re.M)  # none beside counters


def test_counters_scrape_with_total_and_histograms_with_kai_buckets() -> None:
    m = filled()
    assert m.sample("podmuster_scheduling_cycles_total") == 2
    assert m.sample("podmuster_bind_requests_created_total") == 3
    assert m.sample("podmuster_cycle_latency_milliseconds_bucket", le="20.0") == 1
    assert m.sample("podmuster_cycle_latency_milliseconds_bucket", le="+Inf") == 2
    assert m.sample("podmuster_cycle_latency_milliseconds_sum") == 3012.5
    assert LATENCY_BUCKETS_MS[0] == 5.0
    assert LATENCY_BUCKETS_MS[-1] == 2560.0


def test_scheduler_helpers_convert_units() -> None:
    m = filled()
    assert m.sample("kai_queue_fair_share_cpu_cores", queue_name="q") == 1.5
    assert m.sample("kai_queue_fair_share_memory_gb", queue_name="q") == 2.0
    assert m.sample("kai_queue_deserved_gpus", queue_name="q") == -1
    assert m.sample("kai_queue_allocated_memory_bytes", queue_name="q") == 0
    labels = {"podgroup": "pg", "uid": "u", "nodepool": "default", "action": "reclaim"}
    assert m.sample("kai_pod_group_evicted_pods_total", **labels) == 2


def test_queue_gauges_drop_deleted_queues() -> None:
    m = filled()
    metrics.set_queue_shares({}, metrics=m)
    m.set_queues({}, {})
    assert 'queue_name="q"' not in m.render()


def test_observe_result_reads_a_cycle_result() -> None:
    from scheduler.cycle import Bind, CycleResult, Eviction, QueueSummary

    zero = (0.0, 0.0, 0.0)
    result = CycleResult(
        binds=[Bind("ns/a", "n1"), Bind("ns/b", "n1")],
        evictions=[Eviction("ns/c", "reclaim", "ns/pg"), Eviction("ns/d", "reclaim", None)],
        queues=[QueueSummary("q", None, zero, (1.5, 2000.0, 3e9), zero, zero, zero)],
    )
    m = Metrics()
    metrics.observe_result(result, 42.0, {"allocate": 40.0}, metrics=m)
    assert m.sample("podmuster_bind_requests_created_total") == 2
    evicted = {"podgroup": "", "uid": "", "nodepool": "default", "action": "reclaim"}
    assert m.sample("kai_pod_group_evicted_pods_total", **evicted) == 2
    assert m.sample("kai_queue_fair_share_gpu", queue_name="q") == 1.5
    assert m.sample("kai_queue_fair_share_cpu_cores", queue_name="q") == 2.0
    assert m.sample("kai_queue_fair_share_memory_gb", queue_name="q") == 3.0
    assert m.sample("kai_e2e_scheduling_latency_milliseconds") == 42.0
    assert m.sample("kai_action_scheduling_latency_milliseconds", action="allocate") == 40.0


def test_a_queue_that_comes_back_is_exported_again() -> None:
    m = Metrics()
    for shares in (
        {"q": {"gpu": 1.0}, "r": {"gpu": 2.0}},
        {"r": {"gpu": 3.0}},
        {"q": {"gpu": 4.0}},
    ):
        metrics.set_queue_shares(shares, metrics=m)
    assert m.sample("kai_queue_fair_share_gpu", queue_name="q") == 4.0
    assert 'queue_name="r"' not in m.render()
