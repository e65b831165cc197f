"""The flags of ``podmuster run webhooks``, parsed without importing aiohttp.

Why: ``podmuster`` builds every subcommand's parser at start-up; the webhook server
and its client load only when the webhooks actually run.
"""

from __future__ import annotations

import argparse
from typing import Any

from crds.names import DEFAULT_SCHEDULER_NAME, QUEUE_LABEL

__all__ = ["add_parser"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``webhooks`` to a ``run`` subcommand's subparsers."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "webhooks",
        help="run the admission webhooks: validate PodGroups, Queues and GPU-sharing pods, "
        "and wire GPU-sharing pods' env",
        description="Serve the validating admission webhooks for PodGroups (subgroup names "
        "unique, parents exist, no cycles, minMember >= 1), Queues (resources present, "
        "parent exists, no cycles, valid numbers) and the GPU-sharing annotations of pods "
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
    parser.add_argument("--kubeconfig", default="", help="kubeconfig file (default: the usual)")
    parser.add_argument("--context", default="", help="kubeconfig context (default: current)")
    parser.add_argument("--port", type=int, default=9443, help="HTTPS port of the webhooks")
    parser.add_argument(
        "--health-port", type=int, default=8080, help="plain HTTP port of /healthz (-1: off)"
    )
    parser.add_argument("--tls-cert-file", required=True, help="serving certificate (PEM)")
    parser.add_argument("--tls-key-file", required=True, help="its private key (PEM)")
    parser.add_argument("--log-level", choices=("debug", "info", "warning"), default="info")
    parser.set_defaults(handler=run_webhooks)
    return parser


def run_webhooks(args: argparse.Namespace) -> int:
    import asyncio
    import logging
    import signal
    import ssl
    import sys

    from kubeapi.credentials import CredentialsError
    from kubeapi.credentials import load as load_credentials
    from kubeapi.http import KubeHttp
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
    except CredentialsError as exc:
        print(f"podmuster run webhooks: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s"
    )

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        api = KubeHttp(creds, component="podmuster-webhooks")
        try:
            await server.serve(
                server.queue_lister(api),
                port=args.port,
                health_port=args.health_port,
                tls=tls,
                stop=stop,
                scheduler_name=args.scheduler_name,
                gate_all_queues=args.admission_gate_all_queues,
                queue_label=args.queue_label_key,
            )
        finally:
            await api.close()

    asyncio.run(main())
    return 0
