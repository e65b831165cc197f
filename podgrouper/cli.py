"""``podmuster run podgrouper``: flags, the explicit kopf registry, and the operator run.

Why this module exists: everything that ties the podgrouper to a live cluster is set up
here, once, at start: settings from flags (validated before connecting), credentials
(shared by kopf's watcher and our own client), the grouper registry with user adapters
from entry points, and a kopf registry built explicitly — the pod handlers, a login
handler returning our credentials, start-up (operator settings, the :class:`Runtime`
into ``memo``) and clean-up (closing the client).

kopf's bookkeeping on pods is kept small and ours: progress and the last handled state
are annotations under ``podgrouper.podmuster.io/``, the diff ignores ``spec`` and
``status`` (a pod's grouping depends on its metadata), and kopf's own logging is not
posted as Kubernetes events — only the reconcile's ``PodGrouperWarning`` events are.

Flags (``podmuster run podgrouper --help``): the common ones of every component
(:mod:`liveprocess.flags`: ``--kubeconfig``, ``--context``, ``--kube-api-qps/-burst`` for
our client, ``--leader-elect`` with a Lease ``podmuster-podgrouper`` whose holder alone
runs kopf and writes, ``--metrics-port`` 8084 with ``/healthz`` and ``/readyz``, ready
once kopf has started, ``--health-port``, ``--log-level``, ``--log-format``), and::

    --namespace NS           watch only NS; repeatable, globs allowed (default: all)
    --peering NAME           kopf peering object for one active replica (not with --leader-elect)
    --liveness URL           kopf's own liveness endpoint, e.g. http://0.0.0.0:8081/healthz
    --scheduler-name NAME    pods to group (default kai-scheduler)
    --queue-label-key KEY    queue label (default kai.scheduler/queue)
    --nodepool-label-key KEY node-pool label (default kai.scheduler/node-pool)
    --namespace-label-selector SEL   only namespaces matching SEL (checked per event)
    --pod-label-selector SEL         only pods matching SEL (kubectl -l syntax)
    --default-priorities-configmap-name NAME, --default-priorities-configmap-namespace NS
                             the default-priorities ConfigMap (both or neither)
    --knative-gang-schedule true|false   PodGroup per Revision (default) or per pod
    --max-concurrent-reconciles N        kopf worker limit (default 10)

Exit code 2 with one line on stderr for a bad flag value, selector, kubeconfig or user
adapter; otherwise the operator runs until SIGTERM/SIGINT and returns 0.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import signal
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import kopf

from integrations import registry
from kubeapi import credentials, execauth, ratelimit
from kubeapi import http as kubehttp
from kubeapi.protocol import Kube
from liveprocess import flags as common
from liveprocess import logs, serving
from liveprocess.fencing import FencedWrites
from liveprocess.leader import LeaderElector, identity
from podgrouper import adapters, flags, handlers, settings

ANNOTATION_PREFIX = "podgrouper.podmuster.io"
CLIENT_KEY = "podgrouper.client"
"""Our client in kopf's memo (closed at clean-up)."""
LEASE = "podmuster-podgrouper"
"""The default Lease of ``--leader-elect``."""
WORKER_IDLE_SECONDS = 0.25
"""How long a kopf worker waits for more events of its pod before it frees its slot.

kopf's default (5 s) keeps each of the ``--max-concurrent-reconciles`` slots busy for
5 s after its pod is done, so a burst of new pods was grouped ten every five seconds
(measured: 40 pods took 22 s). A worker that exits is re-created on the pod's next event.
"""


def connection_info(creds: credentials.Credentials) -> kopf.ConnectionInfo:
    """Our credentials in kopf's terms (kopf logs in again with them on a 401 and at an
    exec credential's ``expiration``, a little before it expires)."""
    current = creds.exec_credential()
    cert_pem, key_pem = current.certificate_pem, current.key_pem
    expiration = None
    if current.expires is not None:
        margin = current.expires - execauth.REFRESH_MARGIN
        expiration = datetime.datetime.fromtimestamp(margin, tz=datetime.UTC)
    return kopf.ConnectionInfo(
        server=creds.server,
        ca_path=creds.ca_path or None,
        ca_data=creds.ca_data or None,
        insecure=creds.insecure or None,
        token=current.token or creds.bearer_token() or None,
        certificate_path=None if cert_pem else creds.certificate_path or None,
        certificate_data=cert_pem or creds.certificate_data or None,
        private_key_path=None if key_pem else creds.key_path or None,
        private_key_data=key_pem or creds.key_data or None,
        default_namespace=creds.namespace,
        expiration=expiration,
    )


def configure(operator: kopf.OperatorSettings, config: settings.PodGrouperSettings) -> None:
    """kopf settings: our annotation prefix, a metadata-only diff, no posted log events."""
    operator.posting.enabled = False
    operator.queueing.worker_limit = config.max_concurrent_reconciles
    operator.queueing.idle_timeout = WORKER_IDLE_SECONDS
    operator.persistence.progress_storage = kopf.AnnotationsProgressStorage(
        prefix=ANNOTATION_PREFIX
    )
    operator.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix=ANNOTATION_PREFIX, ignored_fields=["spec", "status"]
    )
    operator.persistence.finalizer = f"{ANNOTATION_PREFIX}/finalizer"


def build_operator_registry(
    config: settings.PodGrouperSettings,
    creds: credentials.Credentials,
    groupers: registry.GrouperRegistry,
    *,
    limit: ratelimit.RateLimit | None = None,
    fence: Callable[[], bool] | None = None,
) -> kopf.OperatorRegistry:
    """The kopf registry: pod handlers, login, start-up and clean-up; nothing global.

    Our client is limited to ``limit``; with ``fence`` (a Lease's ``leading``), every
    write goes through :class:`~liveprocess.fencing.FencedWrites`.
    """
    operator = kopf.OperatorRegistry()
    handlers.register(operator, config)

    logins = 0

    @kopf.on.login(id="podgrouper/login", registry=operator)
    def login(**_: Any) -> kopf.ConnectionInfo:
        # Every login after the first follows a 401 or an expiry: an exec plugin runs again.
        nonlocal logins
        if logins:
            creds.invalidate()
        logins += 1
        return connection_info(creds)

    @kopf.on.startup(id="podgrouper/startup", registry=operator)
    def startup(*, settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
        configure(settings, config)
        client = kubehttp.KubeHttp(creds, component="podgrouper", rate_limit=limit)
        kube: Kube = client if fence is None else FencedWrites(client, fence)
        memo[CLIENT_KEY] = client
        memo[handlers.MEMO_KEY] = handlers.Runtime(kube, groupers, config)

    @kopf.on.cleanup(id="podgrouper/cleanup", registry=operator)
    async def cleanup(*, memo: kopf.Memo, **_: Any) -> None:
        client = memo.get(CLIENT_KEY)
        if isinstance(client, kubehttp.KubeHttp):
            await client.close()

    return operator


@dataclass(frozen=True)
class Prepared:
    """What the operator needs, validated before anything connects."""

    config: settings.PodGrouperSettings
    groupers: registry.GrouperRegistry
    creds: credentials.Credentials


def prepare(args: argparse.Namespace) -> Prepared:
    """Settings, adapters and credentials from flags.

    Raises ``ValueError``, ``adapters.AdapterError`` or ``credentials.CredentialsError``
    with a message naming the flag, the adapter or the kubeconfig.
    """
    if getattr(args, "leader_elect", False) and args.peering:
        raise ValueError("--leader-elect and --peering: choose one way to elect a replica")
    config = flags.settings_from_args(args)
    groupers = adapters.build_registry(config.grouping())
    creds = credentials.load(args.kubeconfig, args.context)
    return Prepared(config, groupers, creds)


CONFIG_ERRORS = (ValueError, adapters.AdapterError, credentials.CredentialsError)
"""The exceptions :func:`prepare` raises for a bad flag, adapter or kubeconfig."""


async def operate(
    args: argparse.Namespace,
    prepared: Prepared,
    stop: asyncio.Event | None = None,
    ready: asyncio.Event | None = None,
    *,
    limit: ratelimit.RateLimit | None = None,
    fence: Callable[[], bool] | None = None,
) -> None:
    """Run the operator in the running event loop until ``stop`` is set (or a signal).

    ``podmuster run all`` runs this next to the scheduler, the binder and the
    controllers; ``ready`` is set once kopf has started (and installed its own
    signal handlers, which the caller may want to replace with its own). ``limit`` and
    ``fence``: :func:`build_operator_registry`.
    """
    await kopf.operator(
        registry=build_operator_registry(
            prepared.config, prepared.creds, prepared.groupers, limit=limit, fence=fence
        ),
        memo=kopf.Memo(),
        clusterwide=not args.namespace,
        namespaces=args.namespace,
        standalone=not args.peering,
        peering_name=args.peering or None,
        liveness_endpoint=args.liveness or None,
        stop_flag=stop,
        ready_flag=ready,
    )


def run(args: argparse.Namespace) -> int:
    """Start the operator from parsed flags; a configuration error is one line, exit 2."""
    try:
        limit = ratelimit.from_arguments(args)
        prepared = prepare(args)
    except (*CONFIG_ERRORS, ratelimit.RateLimitError) as exc:
        print(f"podmuster run podgrouper: {exc}", file=sys.stderr)
        return 2
    logs.configure_from(args)
    return asyncio.run(serve(args, prepared, limit))


async def serve(
    args: argparse.Namespace, prepared: Prepared, limit: ratelimit.RateLimit | None
) -> int:
    """Serve the endpoints and run kopf (with ``--leader-elect``, only while leading):
    0 after SIGTERM/SIGINT, 1 once the Lease is lost."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    endpoints = serving.start(serving.new_registry(), args.metrics_port, common.health_port(args))
    elector: LeaderElector | None = None
    lease_client: kubehttp.KubeHttp | None = None
    checks: list[int] = []  # removing a check twice is harmless
    code = 0
    try:
        if args.leader_elect:
            lease_client = kubehttp.KubeHttp(
                prepared.creds, component="podgrouper-lease", rate_limit=limit
            )
            elector = LeaderElector(
                lease_client,
                common.lease_namespace(args, prepared.creds.namespace),
                identity(),
                name=common.lease_name(args, LEASE),
            )
            checks.append(serving.READINESS.add("leader election", elector.readiness))
            if not await elector.acquire(stop):
                return 0  # a standby waiting for the Lease is ready, as kube-scheduler's
        started = serving.READINESS.waiting("podgrouper", "kopf not started")
        checks.append(started)
        ready = asyncio.Event()
        fence = None if elector is None else elector.leading
        kopf_task = asyncio.create_task(
            operate(args, prepared, stop, ready, limit=limit, fence=fence)
        )
        ready_task = asyncio.create_task(ready.wait())
        pending: set[asyncio.Task[Any]] = {kopf_task, ready_task}
        holding = asyncio.create_task(elector.hold(stop)) if elector is not None else None
        if holding is not None:
            pending.add(holding)
        while kopf_task in pending:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            if ready_task in done:  # kopf has started: ready
                serving.READINESS.remove(started)
            if holding in done and not stop.is_set():
                code = 1  # the Lease may be another replica's now: stop, be restarted
                stop.set()
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        await kopf_task
    finally:
        if elector is not None:
            await elector.release()
        if lease_client is not None:
            await lease_client.close()
        for check in checks:
            serving.READINESS.remove(check)
        await endpoints.stop()
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """``podmuster run podgrouper [flags]`` as a function; returns the exit code."""
    parser = argparse.ArgumentParser(prog="podmuster run podgrouper")
    common.add_common_arguments(parser, metrics_port=flags.DEFAULT_METRICS_PORT)
    flags.add_arguments(parser)
    return run(parser.parse_args(argv))
