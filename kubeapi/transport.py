"""What :mod:`kubeapi.http` needs besides aiohttp: paths, TLS, decoding, watch lines.

Why this module exists: these pieces are pure (no network) and testable on their own;
keeping them out of :mod:`kubeapi.http` keeps the client itself short.
"""

from __future__ import annotations

import base64
import json
import ssl
import tempfile
from collections.abc import AsyncIterable, AsyncIterator
from pathlib import Path

from kubeapi import credentials, errors
from kubeapi.objects import Object, ObjectRef
from kubeapi.protocol import WatchEvent

BUILTIN: dict[tuple[str, str], tuple[str, bool]] = {
    ("v1", "Pod"): ("pods", True),
    ("v1", "Node"): ("nodes", False),
    ("v1", "Namespace"): ("namespaces", False),
    ("v1", "ConfigMap"): ("configmaps", True),
    ("v1", "Event"): ("events", True),
    ("coordination.k8s.io/v1", "Lease"): ("leases", True),
    ("scheduling.k8s.io/v1", "PriorityClass"): ("priorityclasses", False),
    ("scheduling.k8s.io/v1beta1", "Workload"): ("workloads", True),
    ("scheduling.k8s.io/v1beta1", "PodGroup"): ("podgroups", True),
    ("scheduling.k8s.io/v1alpha3", "CompositePodGroup"): ("compositepodgroups", True),
    ("scheduling.run.ai/v2alpha2", "PodGroup"): ("podgroups", True),
    ("scheduling.run.ai/v2", "Queue"): ("queues", False),
    ("scheduling.run.ai/v1alpha2", "BindRequest"): ("bindrequests", True),
    ("kai.scheduler/v1alpha1", "Topology"): ("topologies", False),
    ("apps/v1", "ReplicaSet"): ("replicasets", True),
    ("apps/v1", "Deployment"): ("deployments", True),
    ("apps/v1", "StatefulSet"): ("statefulsets", True),
    ("batch/v1", "Job"): ("jobs", True),
    ("batch/v1", "CronJob"): ("cronjobs", True),
}
"""(apiVersion, kind) → (plural, namespaced) for the kinds needing no discovery."""


def root(api_version: str) -> str:
    """``/api/v1`` for the core group, ``/apis/<group>/<version>`` otherwise."""
    return f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"


def ssl_context(creds: credentials.Credentials) -> ssl.SSLContext | bool:
    """TLS settings: the CA (file or data), a client certificate (the kubeconfig's or the
    exec plugin's current one), or no verification."""
    if creds.insecure:
        return False
    ca_data = base64.b64decode(creds.ca_data).decode() if creds.ca_data else None
    context = ssl.create_default_context(cafile=creds.ca_path or None, cadata=ca_data)
    cert_pem, key_pem = creds.client_certificate_pem()
    if cert_pem:
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "c").write_text(cert_pem)
            (Path(tmp) / "k").write_text(key_pem)
            context.load_cert_chain(str(Path(tmp) / "c"), str(Path(tmp) / "k"))
    elif creds.certificate_path or creds.certificate_data:
        with tempfile.TemporaryDirectory() as tmp:
            cert = _as_file(creds.certificate_path, creds.certificate_data, Path(tmp) / "c")
            key = _as_file(creds.key_path, creds.key_data, Path(tmp) / "k")
            context.load_cert_chain(cert, key or None)
    return context


def _as_file(path: str, data: str, scratch: Path) -> str:
    if path or not data:
        return path
    scratch.write_bytes(base64.b64decode(data))
    return str(scratch)


def decode(ref: ObjectRef | str, call: str, status: int, reason: str, raw: bytes) -> Object:
    """The JSON body of a reply, or the error for its status (the Status message)."""
    try:
        payload = json.loads(raw) if raw else {}
    except ValueError as exc:
        if status >= 400:
            raise errors.error_for_status(ref, status, reason or call) from exc
        raise errors.TransientError(ref, f"{call}: not JSON", status) from exc
    if status >= 400:
        message = payload.get("message") if isinstance(payload, dict) else None
        raise errors.error_for_status(ref, status, str(message or reason or call))
    return payload if isinstance(payload, dict) else {}


async def lines(chunks: AsyncIterable[bytes]) -> AsyncIterator[bytes]:
    """Newline-separated records of a byte stream, however the chunks split them."""
    pending = b""
    async for chunk in chunks:
        pending += chunk
        *complete, pending = pending.split(b"\n")
        for line in complete:
            if line.strip():
                yield line
    if pending.strip():
        yield pending


def watch_event(ref: ObjectRef | str, api_version: str, kind: str, line: bytes) -> WatchEvent:
    """One watch record; ERROR records raise (410 as GoneError)."""
    try:
        record = json.loads(line)
    except ValueError as exc:
        raise errors.TransientError(ref, f"watch: not JSON: {line[:80]!r}") from exc
    event_type = str(record.get("type") or "")
    obj = record.get("object") or {}
    if event_type == "ERROR":
        code = int(obj.get("code") or 500)
        raise errors.error_for_status(ref, code, str(obj.get("message") or "watch error"))
    obj.setdefault("apiVersion", api_version)
    obj.setdefault("kind", kind)
    return WatchEvent(event_type, obj)
