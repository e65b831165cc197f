"""The flags of ``podmuster run webhooks``, parsed without importing aiohttp.

Why: ``podmuster`` builds every subcommand's parser at start-up; the webhook server
and its client load only when the webhooks actually run.
"""

from __future__ import annotations

import argparse
from typing import Any

from crds.gpusharing import FRACTION_RUNTIME_CLASS
from crds.names import DEFAULT_SCHEDULER_NAME, QUEUE_LABEL
from liveprocess.flags import add_common_arguments

__all__ = ["add_parser"]

DEFAULT_METRICS_PORT = 8080
"""Also the port of ``/healthz``, as before the common flags (``--health-port`` 8080)."""


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``webhooks`` to a ``run`` subcommand's subparsers."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "webhooks",
        help="run the admission webhooks: validate PodGroups, Queues and GPU-sharing pods, "
        "and wire GPU-sharing pods' env",
        description="Serve the validating admission webhooks for PodGroups (subgroup names "
        "unique, parents exist, no cycles, minMember/minSubGroup as KAI allows), Queues "
        "(resources present, "
        "parent exists, no cycles, valid numbers), Topologies (level labels unique, "
        "kubernetes.io/hostname last, aliases unique and none equal to a level's label) "
        "and the GPU-sharing annotations of pods "
        "(gpu-fraction, gpu-memory, gpu-fraction-num-devices, gpu-fraction-container-name, "
        "mps) over HTTPS; /mutate-pod wires a GPU-sharing pod's NVIDIA_VISIBLE_DEVICES and "
        "GPU_PORTION to its ConfigMap (runai/shared-gpu-configmap), which the binder writes; "
        "/gate-pod holds new pods of queues under admission behind the "
        "kai.scheduler/queue-admission scheduling gate.",
    )
    parser.add_argument(
        "--scheduler-name",
        default=DEFAULT_SCHEDULER_NAME,
        help="judge only the pods with this spec.schedulerName (default: kai-scheduler)",
    )
    parser.add_argument(
        "--queue-label-key",
        default=QUEUE_LABEL,
        help="the pod label naming its queue, read by /gate-pod (default: kai.scheduler/queue)",
    )
    parser.add_argument(
        "--admission-gate-all-queues",
        action="store_true",
        help="/gate-pod holds every new pod of our scheduler behind the queue admission "
        "gate, not only pods of queues annotated kai.scheduler/admission-gate=true",
    )
    parser.add_argument(
        "--gpu-fraction-runtime-class-name",
        default=FRACTION_RUNTIME_CLASS,
        help="spec.runtimeClassName /mutate-pod gives a gpu-fraction or gpu-memory pod that "
        f"names none (default: {FRACTION_RUNTIME_CLASS}, as KAI's; empty: none, for nodes "
        "whose default container runtime is NVIDIA's). The RuntimeClass must exist, or the "
        "API server refuses the pod",
    )
    add_common_arguments(parser, metrics_port=DEFAULT_METRICS_PORT)
    parser.add_argument("--port", type=int, default=9443, help="HTTPS port of the webhooks")
    parser.add_argument("--tls-cert-file", required=True, help="serving certificate (PEM)")
    parser.add_argument("--tls-key-file", required=True, help="its private key (PEM)")
    parser.set_defaults(handler=run_webhooks)
    return parser


def run_webhooks(args: argparse.Namespace) -> int:
    import asyncio
    import logging
    import signal
    import ssl
    import sys

    from kubeapi import ratelimit
    from kubeapi.credentials import CredentialsError
    from kubeapi.credentials import load as load_credentials
    from kubeapi.http import KubeHttp
    from liveprocess import flags, logs, serving
    from webhooks import server

    # Bad files are one line naming the flag, exit 2, before anything is served.
    try:
        tls = server.tls_context(args.tls_cert_file, args.tls_key_file)
    except (OSError, ssl.SSLError) as exc:
        print(
            f"podmuster run webhooks: --tls-cert-file/--tls-key-file: cannot load "
            f"{args.tls_cert_file} and {args.tls_key_file}: {exc}",
            file=sys.stderr,
        )
        return 2
    try:
        creds = load_credentials(args.kubeconfig, args.context)
        limit = ratelimit.from_arguments(args)
    except (CredentialsError, ratelimit.RateLimitError) as exc:
        print(f"podmuster run webhooks: {exc}", file=sys.stderr)
        return 2
    logs.configure_from(args)
    if args.leader_elect:
        logging.getLogger("podmuster").info(
            "--leader-elect: the webhooks answer on every replica; no Lease is taken"
        )

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        api = KubeHttp(creds, component="podmuster-webhooks", rate_limit=limit)
        endpoints = serving.start(
            serving.new_registry(), args.metrics_port, flags.health_port(args)
        )
        waiting = serving.READINESS.waiting("webhooks", "not listening yet")
        try:
            await server.serve(
                server.queue_lister(api),
                port=args.port,
                tls=tls,
                stop=stop,
                scheduler_name=args.scheduler_name,
                gate_all_queues=args.admission_gate_all_queues,
                queue_label=args.queue_label_key,
                fraction_runtime_class=args.gpu_fraction_runtime_class_name,
                listening=lambda: serving.READINESS.remove(waiting),
            )
        finally:
            serving.READINESS.remove(waiting)
            await endpoints.stop()
            await api.close()

    asyncio.run(main())
    return 0
