"""The HTTPS edge of the admission webhooks: AdmissionReview in, a verdict out.

Why this module exists: the API server calls a validating webhook over HTTPS with an
``admission.k8s.io/v1`` AdmissionReview. This module decodes it, asks
:mod:`webhooks.validation` (a PodGroup or a Topology alone; a Queue with the current
Queues, for its parent and cycle checks) or :mod:`webhooks.pods` (a Pod's GPU-sharing
annotations), and answers; it holds no rule of its own. The mutating paths answer with
a JSONPatch: ``/mutate-pod`` the one of :mod:`webhooks.podenv` (a GPU-sharing pod's env
wiring), ``/gate-pod`` the one of :mod:`webhooks.gating` (the queue admission gate, from
Queues read at most every :data:`QUEUE_CACHE_SECONDS`). ``/healthz`` is served on a
separate plain-HTTP port for the kubelet's probes.

A failure to read the Queues is answered with HTTP 500, so the webhook configuration's
``failurePolicy`` decides, as for a webhook that is down.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import secrets
import ssl
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from aiohttp import web

from crds import podgroup, queue, topology
from crds.errors import InputError
from crds.gpusharing import FRACTION_RUNTIME_CLASS
from crds.names import DEFAULT_SCHEDULER_NAME, QUEUE_LABEL
from kubeapi.errors import ApiError
from kubeapi.protocol import KubeReader
from webhooks import gating, podenv, pods, validation

__all__ = ["PATHS", "build_app", "mutation_response", "review_response", "serve"]

log = logging.getLogger("podmuster.webhooks")

PATHS = {
    "podgroups": "/validate-podgroup",
    "queues": "/validate-queue",
    "topologies": "/validate-topology",
    "pods": "/validate-pod",
    "pod-mutation": "/mutate-pod",
    "pod-admission-gate": "/gate-pod",
}

QUEUE_CACHE_SECONDS = 2.0
"""How long the Queues read for the admission gate serve later pods (creating a burst of
pods costs one Queue list, and a queue annotated this long ago is seen)."""

QueueLister = Callable[[], Awaitable[Mapping[str, Mapping[str, Any]]]]


def review_response(
    review: Mapping[str, Any], problems: list[InputError], warnings: Sequence[InputError] = ()
) -> dict[str, Any]:
    """The AdmissionReview answering ``review``: allowed, or denied with every problem.

    ``warnings`` go back either way (the API server shows them to the client).
    """
    request = review.get("request") or {}
    response: dict[str, Any] = {"uid": request.get("uid", ""), "allowed": not problems}
    if warnings:
        response["warnings"] = [str(w) for w in warnings]
    if problems:
        response["status"] = {
            "code": 422,
            "reason": "Invalid",
            "message": "; ".join(str(p) for p in problems),
        }
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}


def mutation_response(review: Mapping[str, Any], patch: list[dict[str, Any]]) -> dict[str, Any]:
    """The AdmissionReview answering ``review``: allowed, with ``patch`` when there is one."""
    request = review.get("request") or {}
    response: dict[str, Any] = {"uid": request.get("uid", ""), "allowed": True}
    if patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}


def queue_lister(api: KubeReader) -> QueueLister:
    """The Queues that exist now, by name, read from the API server at each call."""

    async def existing() -> Mapping[str, Mapping[str, Any]]:
        items = await api.list(queue.API_VERSION, queue.KIND, "")
        return {str((q.get("metadata") or {}).get("name")): q for q in items}

    return existing


def recent(queues: QueueLister, seconds: float = QUEUE_CACHE_SECONDS) -> QueueLister:
    """``queues``, read again only when the last answer is older than ``seconds``."""
    kept: list[tuple[float, Mapping[str, Mapping[str, Any]]]] = []

    async def cached() -> Mapping[str, Mapping[str, Any]]:
        now = time.monotonic()
        if not kept or now - kept[0][0] > seconds:
            kept[:] = [(now, await queues())]
        return kept[0][1]

    return cached


def build_app(
    queues: QueueLister,
    scheduler_name: str = DEFAULT_SCHEDULER_NAME,
    *,
    gate_all_queues: bool = False,
    queue_label: str = QUEUE_LABEL,
    fraction_runtime_class: str = FRACTION_RUNTIME_CLASS,
) -> web.Application:
    """The webhook application: one POST path per validated kind.

    Pods are judged only when their ``spec.schedulerName`` is ``scheduler_name``;
    ``gate_all_queues`` puts every queue under the admission gate; ``queue_label`` is
    the pod label naming its queue; ``fraction_runtime_class`` is the RuntimeClass the
    mutation gives GPU-sharing pods (empty: none).
    """
    gate_queues = recent(queues)

    async def validate_podgroup(request: web.Request) -> web.Response:
        review, obj = await _decode(request, podgroup.KIND)
        update = (review.get("request") or {}).get("operation") == "UPDATE"
        problems, warnings = validation.podgroup_review(obj, update=update)
        return web.json_response(review_response(review, problems, warnings))

    async def validate_queue(request: web.Request) -> web.Response:
        review, obj = await _decode(request, queue.KIND)
        try:
            existing = await queues()
        except ApiError as exc:
            log.error("reading Queues: %s", exc)
            raise web.HTTPInternalServerError(text=f"reading Queues: {exc}") from exc
        problems = validation.validate_queue(obj, existing)
        return web.json_response(review_response(review, problems))

    async def validate_topology(request: web.Request) -> web.Response:
        review, obj = await _decode(request, topology.KIND)
        return web.json_response(review_response(review, validation.validate_topology(obj)))

    async def validate_pod(request: web.Request) -> web.Response:
        review, obj = await _decode(request, "Pod")
        problems = pods.validate_pod(obj, scheduler_name)
        return web.json_response(review_response(review, problems))

    async def mutate_pod(request: web.Request) -> web.Response:
        review, obj = await _decode(request, "Pod")
        suffix = secrets.token_hex(podenv.SUFFIX_BYTES)
        patch = podenv.mutate_pod(obj, scheduler_name, suffix, runtime_class=fraction_runtime_class)
        return web.json_response(mutation_response(review, patch))

    async def gate_pod(request: web.Request) -> web.Response:
        review, obj = await _decode(request, "Pod")
        gated: frozenset[str] = frozenset()
        if not gate_all_queues:
            try:
                gated = gating.gated_queues(await gate_queues())
            except ApiError as exc:
                log.error("reading Queues: %s", exc)
                raise web.HTTPInternalServerError(text=f"reading Queues: {exc}") from exc
        patch = gating.gate_patch(
            obj, scheduler_name, gated, everywhere=gate_all_queues, queue_label=queue_label
        )
        return web.json_response(mutation_response(review, patch))

    app = web.Application(client_max_size=8 * 1024 * 1024)
    app.router.add_post(PATHS["podgroups"], validate_podgroup)
    app.router.add_post(PATHS["queues"], validate_queue)
    app.router.add_post(PATHS["topologies"], validate_topology)
    app.router.add_post(PATHS["pods"], validate_pod)
    app.router.add_post(PATHS["pod-mutation"], mutate_pod)
    app.router.add_post(PATHS["pod-admission-gate"], gate_pod)
    return app


async def _decode(request: web.Request, kind: str) -> tuple[dict[str, Any], dict[str, Any]]:
    try:
        review = await request.json()
    except ValueError as exc:
        raise web.HTTPBadRequest(text=f"not JSON: {exc}") from exc
    obj = (review.get("request") or {}).get("object") if isinstance(review, dict) else None
    if not isinstance(obj, dict) or obj.get("kind") != kind:
        raise web.HTTPBadRequest(text=f"expected an AdmissionReview of a {kind}")
    namespace = review["request"].get("namespace")
    metadata = obj.get("metadata")
    if namespace and isinstance(metadata, dict) and not metadata.get("namespace"):
        obj = {**obj, "metadata": {**metadata, "namespace": namespace}}  # for the messages
    return review, obj


async def serve(
    queues: QueueLister,
    *,
    port: int,
    tls: ssl.SSLContext,
    stop: asyncio.Event,
    host: str = "0.0.0.0",
    scheduler_name: str = DEFAULT_SCHEDULER_NAME,
    gate_all_queues: bool = False,
    queue_label: str = QUEUE_LABEL,
    fraction_runtime_class: str = FRACTION_RUNTIME_CLASS,
    listening: Callable[[], None] | None = None,
) -> None:
    """Serve the webhooks on ``port`` (HTTPS) until ``stop``; ``listening`` is called
    once the port is open (the process's ``/readyz`` waits for it)."""
    app = build_app(
        queues,
        scheduler_name,
        gate_all_queues=gate_all_queues,
        queue_label=queue_label,
        fraction_runtime_class=fraction_runtime_class,
    )
    runner = web.AppRunner(app)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port, ssl_context=tls).start()
        log.info("webhooks on port %d", port)
        if listening is not None:
            listening()
        await stop.wait()
    finally:
        await runner.cleanup()


def tls_context(cert_file: str, key_file: str) -> ssl.SSLContext:
    """A server context from PEM files (re-read at start only)."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert_file, key_file)
    return context
