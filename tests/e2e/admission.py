"""The queue admission webhook for e2e tests: ``podmuster run webhooks`` served to the
real API server, and a MutatingWebhookConfiguration sending one namespace's new pods of
our scheduler to ``/gate-pod`` (docs/semantics.md §5.11).

Why: the API server must reach the webhook over HTTPS with a certificate it trusts, so
this needs the local control plane (its CA signs the webhook's certificate, and it
reaches 127.0.0.1); tests elsewhere are skipped. Both the scheduler-only and the
whole-pipeline tests use it.
"""

from __future__ import annotations

import base64
import contextlib
import json
from collections.abc import Iterator
from typing import Any

import pytest

from crds.names import ADMISSION_GATE, ADMISSION_GATE_ANNOTATION

from .controlplane import Cluster, http_ok
from .kube import NotYet, Obj, wait_for
from .live import component
from .procs import free_port, wait_until


@contextlib.contextmanager
def webhooks_server(cluster: Cluster) -> Iterator[int]:
    """``podmuster run webhooks`` on a free port; yields the port."""
    if cluster.local is None or cluster.local.pki is None:
        pytest.skip("the API server must reach this machine's 127.0.0.1 (local control plane)")
    cert = cluster.local.pki.server("podmuster-webhooks")
    port, health = free_port(), free_port()
    flags = [f"--tls-cert-file={cert.cert}", f"--tls-key-file={cert.key}",
             f"--port={port}", f"--health-port={health}", "--metrics-port=0"]  # fmt: skip
    with component(cluster, "webhooks", flags) as proc:
        url = f"http://127.0.0.1:{health}/readyz"  # ready: the HTTPS port listens
        wait_until("webhooks /readyz", lambda: http_ok(url), 60, [proc])
        yield port


def local_hook(cluster: Cluster, port: int, path: str, name: str, rule: Obj, **extra: Any) -> Obj:
    """A webhook entry (``Fail``, 5 s) calling :func:`webhooks_server`'s ``port`` at ``path``
    for the objects ``rule`` matches, trusted through the control plane's CA; ``extra``
    adds selectors or match conditions."""
    assert cluster.local is not None
    assert cluster.local.pki is not None
    ca = base64.b64encode(cluster.local.pki.ca_cert.read_bytes()).decode()
    return {
        "name": name,
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "failurePolicy": "Fail",
        "timeoutSeconds": 5,
        "clientConfig": {"url": f"https://127.0.0.1:{port}{path}", "caBundle": ca},
        "rules": [rule],
        **extra,
    }


@contextlib.contextmanager
def gate_webhook(cluster: Cluster, port: int, namespace: str, probe: Obj) -> Iterator[None]:
    """Send ``namespace``'s new kai-scheduler pods to ``/gate-pod`` until the block ends.

    Returns once the API server calls it: a server-side dry run of ``probe`` (a pod of
    a queue under the gate) comes back gated.
    """
    name = f"podmuster-gate-{namespace}"
    hook = local_hook(
        cluster, port, "/gate-pod", "queue-admission.podmuster.io",
        {"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"],
         "operations": ["CREATE"], "scope": "Namespaced"},
        namespaceSelector={"matchLabels": {"kubernetes.io/metadata.name": namespace}},
        matchConditions=[{"name": "scheduler-name",
                          "expression": "has(object.spec.schedulerName) && "
                          "object.spec.schedulerName == 'kai-scheduler'"}],
    )  # fmt: skip
    cluster.kubectl.create(
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": name},
            "webhooks": [hook],
        }
    )
    try:

        def serves() -> bool | NotYet:
            out = cluster.kubectl.run("create", "--dry-run=server", "-o", "json", "-f", "-",
                                      stdin=json.dumps(probe))  # fmt: skip
            return ADMISSION_GATE in gates(json.loads(out)) or NotYet("not gated yet")

        wait_for("the API server calling /gate-pod", serves, timeout=60)
        yield
    finally:
        cluster.kubectl.run("delete", "mutatingwebhookconfiguration", name, "--ignore-not-found")


def admission_queue(name: str, cpu_limit: float = -1, gated: bool = True) -> Obj:
    """A Queue (annotated under the gate unless ``gated`` is false) with a CPU limit in
    millicores (-1: none), no GPU quota and no other limit."""
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    meta: dict[str, Any] = {"name": name}
    if gated:
        meta["annotations"] = {ADMISSION_GATE_ANNOTATION: "true"}
    return {
        "apiVersion": "scheduling.run.ai/v2",
        "kind": "Queue",
        "metadata": meta,
        "spec": {
            "resources": {
                "gpu": {"quota": 0, "limit": -1, "overQuotaWeight": 1},
                "cpu": {"quota": -1, "limit": cpu_limit, "overQuotaWeight": 1},
                "memory": unlimited,
            }
        },
    }


def gates(obj: Obj) -> list[str]:
    """The names of a pod's scheduling gates."""
    return [g["name"] for g in obj["spec"].get("schedulingGates") or ()]


def scheduled_condition(obj: Obj) -> dict[str, Any]:
    """The pod's PodScheduled condition ({} when it has none)."""
    for condition in obj.get("status", {}).get("conditions", []):
        if condition["type"] == "PodScheduled":
            return dict(condition)
    return {}
