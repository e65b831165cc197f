"""Every component's ``/metrics``, ``/healthz`` and ``/readyz`` on a real API server, and
the podgrouper's Lease.

A platform team probes and scrapes every component the same way: each one answers
``/readyz`` 200 once its watches have listed (the podgrouper once kopf has started), and
its ``/metrics`` carries the standard ``process_*`` metrics and, for the engine's
components, KAI's metric names with their types. Two podgrouper replicas with
``--leader-elect`` share one Lease: one holds it, the standby is ready but not leading,
and it takes over once the holder stops.
"""

from __future__ import annotations

import contextlib
import urllib.request
import uuid
from collections.abc import Iterator

import pytest
from prometheus_client.parser import text_string_to_metric_families

from .controlplane import Cluster, http_ok
from .kube import Obj, wait_for
from .live import component
from .procs import ManagedProcess, free_port, wait_until

pytestmark = pytest.mark.e2e

ENGINE_FAMILIES = {
    "kai_e2e_scheduling_latency_milliseconds": "gauge",
    "podmuster_scheduling_cycles": "counter",
    "kai_task_bind_latency_milliseconds": "histogram",
    "podmuster_cycle_latency_milliseconds": "histogram",
}
COMPONENTS = {
    "podgrouper": [],
    "scheduler": ["--schedule-period=0.5"],
    "binder": [],
    "controllers": ["--debounce=0.2"],
    "node-scale-adjuster": ["--scaling-pod-namespace=default"],
    "all": ["--schedule-period=0.5", "--debounce=0.2"],
}


@contextlib.contextmanager
def ready(cluster: Cluster, name: str, flags: list[str]) -> Iterator[tuple[ManagedProcess, int]]:
    """``name`` running with its endpoints on a free port, once ``/readyz`` says 200."""
    port = free_port()
    with component(cluster, name, [*flags, f"--metrics-port={port}", "--log-format=json"]) as proc:
        url = f"http://127.0.0.1:{port}/readyz"
        wait_until(f"{name} /readyz", lambda: http_ok(url), 120, [proc])
        yield proc, port


def scrape(port: int) -> dict[str, str]:
    """Family name → type of ``/metrics``."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    return {family.name: family.type for family in text_string_to_metric_families(text)}


@pytest.mark.parametrize("name", sorted(COMPONENTS))
def test_every_component_is_ready_and_scrapeable(cluster: Cluster, name: str) -> None:
    with ready(cluster, name, COMPONENTS[name]) as (_, port):
        assert http_ok(f"http://127.0.0.1:{port}/healthz")
        families = scrape(port)
    assert families["process_cpu_seconds"] == "counter"
    assert families["python_info"] == "gauge"
    if name == "podgrouper":
        assert not [f for f in families if f.startswith(("kai_", "podmuster_"))]
    else:
        assert {f: families.get(f) for f in ENGINE_FAMILIES} == ENGINE_FAMILIES


def holder(cluster: Cluster, namespace: str, name: str) -> str:
    if not cluster.kubectl.exists("lease", name, "-n", namespace):
        return ""
    lease: Obj = cluster.kubectl.get("lease", name, "-n", namespace)
    return str(lease["spec"].get("holderIdentity") or "")


def test_podgrouper_replicas_share_one_lease(cluster: Cluster, namespace: str) -> None:
    lease = f"podgrouper-{uuid.uuid4().hex[:6]}"
    flags = ["--leader-elect", f"--leader-elect-lease-name={lease}",
             f"--leader-elect-lease-namespace={namespace}"]  # fmt: skip
    with ready(cluster, "podgrouper", flags) as (first, _):
        leader = wait_for("a podgrouper leads", lambda: holder(cluster, namespace, lease), 60)
        port = free_port()
        standby_flags = [*flags, f"--metrics-port={port}"]
        with component(cluster, "podgrouper", standby_flags, instance="standby") as second:
            # The standby is ready (not leading), and the Lease stays the first's.
            url = f"http://127.0.0.1:{port}/readyz"
            wait_until("standby /readyz", lambda: http_ok(url), 120, [first, second])
            assert holder(cluster, namespace, lease) == leader
            first.stop()  # SIGTERM: the Lease is released, the standby takes it at once
            wait_for(
                "the standby leads",
                lambda: holder(cluster, namespace, lease) not in ("", leader),
                60,
            )
            second.check_alive()
