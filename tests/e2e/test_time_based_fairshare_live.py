"""The live scheduler reads queue usage from Prometheus and divides fair shares with it.

``podmuster run scheduler --usage-prometheus-url URL`` runs against the real API server;
URL is a tiny Prometheus query API served by this test, answering KAI's queries:
``heavy`` held the whole cluster's GPUs over the window (usage 1.0), ``light`` nothing.
Both queues have quota 0 and weight 1 and each waits with one 64-GPU pod (more than the
cluster holds, so both stay unsatisfied whatever else is there), so with kValue 1 heavy's
over-quota weight is ``max(0, 2w - 1) = 0`` for any normalised weight w <= 1/2 (whatever
other queues the shared cluster holds), while light's is positive: the scheduler's
``kai_queue_fair_share_gpu`` gauge shows heavy at 0 and light above 0.
"""

from __future__ import annotations

import json
import threading
import urllib.parse
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from .conftest import QueueFactory
from .controlplane import Cluster
from .fairshare import heavy_and_light_fair_shares
from .live import component
from .procs import free_port

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

PREFIX = f"u{uuid.uuid4().hex[:5]}"
HEAVY, LIGHT = f"{PREFIX}-heavy", f"{PREFIX}-light"


class Prometheus(BaseHTTPRequestHandler):
    """Answers every capacity query with 100 and GPU allocation with heavy 100, light 0."""

    asked: list[str] = []

    def do_GET(self) -> None:
        query = urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query)["query"][0]
        type(self).asked.append(query)
        if "kube_node_status_capacity" in query:
            result = [{"metric": {}, "value": [0, "100"]}]
        elif "kai_queue_allocated_gpus" in query:
            result = [
                {"metric": {"queue_name": HEAVY}, "value": [0, "100"]},
                {"metric": {"queue_name": LIGHT}, "value": [0, "0"]},
            ]
        else:
            result = []
        body = json.dumps(
            {"status": "success", "data": {"resultType": "vector", "result": result}}
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def prometheus() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Prometheus)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def scheduler(cluster: Cluster, prometheus: str) -> Iterator[int]:
    port = free_port()
    flags = [f"--usage-prometheus-url={prometheus}", f"--metrics-port={port}",
             "--schedule-period=0.5", "--log-format=json"]  # fmt: skip
    with component(cluster, "scheduler", flags) as proc:
        yield port
        proc.check_alive()


def test_usage_from_prometheus_lowers_the_heavy_queues_fair_share(
    cluster: Cluster, scheduler: int, namespace: str, kai_queues: QueueFactory
) -> None:
    with heavy_and_light_fair_shares(cluster, namespace, kai_queues, PREFIX, scheduler) as seen:
        assert seen[HEAVY] == 0
        assert seen[LIGHT] > 0
        assert any("kai_queue_allocated_gpus" in q for q in Prometheus.asked)
