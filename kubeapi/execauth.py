"""Kubeconfig ``exec`` credential plugins (``client.authentication.k8s.io/v1``, ``v1beta1``).

Why this module exists: EKS, GKE and AKS kubeconfigs do not hold a token; they name a
command (``aws``, ``gke-gcloud-auth-plugin``, ``kubelogin``) that prints an
``ExecCredential`` whose ``status`` carries a token or a client certificate and an
expiry.  This module runs that command as client-go does: the user's ``args`` and
``env``, ``KUBERNETES_EXEC_INFO`` (``spec.interactive`` false, the cluster when
``provideClusterInfo``), stdin closed; it caches the credential until a little before
``expirationTimestamp`` and forgets it when the API server answers 401
(:func:`invalidate`; :mod:`kubeapi.http` then retries once).

The official ``kubernetes`` package's ``ExecProvider`` was evaluated and not used (see
:mod:`kubeapi.credentials`): it hands the plugin the terminal when stdout is one, does
not cache or expire credentials, ignores ``installHint``, and its errors do not name the
kubeconfig or the user.  The plugin runs synchronously
(as client-go's does); it runs once per credential lifetime, not per request.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
REFRESH_MARGIN = 30.0
"""Seconds before ``expirationTimestamp`` at which the plugin is run again."""
TIMEOUT = 60.0
"""Seconds a plugin may run."""


class ExecError(Exception):
    """A plugin that cannot run or printed no usable credential (wrapped as
    :class:`kubeapi.credentials.CredentialsError` by the caller's message)."""


@dataclass(frozen=True, slots=True)
class ExecPlugin:
    """One kubeconfig user's ``exec`` entry; ``where`` names kubeconfig and user."""

    where: str
    api_version: str
    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    install_hint: str = ""
    cluster_info: str = ""
    """The ``spec.cluster`` JSON when ``provideClusterInfo`` (else empty)."""


@dataclass(frozen=True, slots=True)
class ExecCredential:
    """What a plugin printed: a token and/or PEM client certificate and key."""

    token: str = ""
    certificate_pem: str = ""
    key_pem: str = ""
    expires: float | None = None
    """Unix time of ``expirationTimestamp`` (None: valid until a 401)."""


_cache: dict[ExecPlugin, ExecCredential] = {}


def parse_plugin(
    entry: Mapping[str, Any], where: str, base: Path, cluster: Mapping[str, Any]
) -> ExecPlugin:
    """The ``exec`` entry of a kubeconfig user; a relative command containing a ``/`` is
    relative to the kubeconfig's directory (as in client-go)."""
    api_version = str(entry.get("apiVersion") or "")
    if api_version not in API_VERSIONS:
        raise ExecError(f"{where}: exec.apiVersion {api_version!r} is not one of {API_VERSIONS}")
    command = str(entry.get("command") or "")
    if not command:
        raise ExecError(f"{where}: exec.command is empty")
    if "/" in command and not os.path.isabs(command):
        command = str(base / command)
    if entry.get("interactiveMode") == "Always":
        raise ExecError(
            f"{where}: exec.interactiveMode is Always, but plugins run without a terminal"
        )
    args = entry.get("args") or []
    if not isinstance(args, list):
        raise ExecError(f"{where}: exec.args is not a list")
    env: list[tuple[str, str]] = []
    for item in entry.get("env") or []:
        if not isinstance(item, Mapping) or "name" not in item:
            raise ExecError(f"{where}: exec.env entry {item!r} has no name")
        env.append((str(item["name"]), str(item.get("value") or "")))
    info = ""
    if entry.get("provideClusterInfo"):
        info = json.dumps(_cluster_spec(cluster))
    return ExecPlugin(
        where=where,
        api_version=api_version,
        command=command,
        args=tuple(str(a) for a in args),
        env=tuple(env),
        install_hint=str(entry.get("installHint") or ""),
        cluster_info=info,
    )


def _cluster_spec(cluster: Mapping[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {"server": str(cluster.get("server") or "")}
    if cluster.get("certificate-authority-data"):
        spec["certificate-authority-data"] = cluster["certificate-authority-data"]
    if cluster.get("insecure-skip-tls-verify"):
        spec["insecure-skip-tls-verify"] = True
    if cluster.get("tls-server-name"):
        spec["tls-server-name"] = cluster["tls-server-name"]
    extension = next(
        (
            e.get("extension")
            for e in cluster.get("extensions") or []
            if isinstance(e, Mapping) and e.get("name") == "client.authentication.k8s.io/exec"
        ),
        None,
    )
    if extension is not None:
        spec["config"] = extension
    return spec


def credential(plugin: ExecPlugin, clock: Callable[[], float] = time.time) -> ExecCredential:
    """The cached credential, or a fresh one when there is none or it expires within
    :data:`REFRESH_MARGIN` seconds."""
    cached = _cache.get(plugin)
    if cached is not None and (cached.expires is None or clock() < cached.expires - REFRESH_MARGIN):
        return cached
    fresh = run(plugin)
    _cache[plugin] = fresh
    return fresh


def invalidate(plugin: ExecPlugin) -> None:
    """Forget the cached credential (the API server refused it)."""
    _cache.pop(plugin, None)


def run(plugin: ExecPlugin) -> ExecCredential:
    """Run the plugin once and parse what it printed."""
    spec: dict[str, Any] = {"interactive": False}
    if plugin.cluster_info:
        spec["cluster"] = json.loads(plugin.cluster_info)
    info = {"apiVersion": plugin.api_version, "kind": "ExecCredential", "spec": spec}
    environ = {**os.environ, **dict(plugin.env), "KUBERNETES_EXEC_INFO": json.dumps(info)}
    try:
        done = subprocess.run(
            [plugin.command, *plugin.args],
            env=environ,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=TIMEOUT,
            check=False,
        )
    except FileNotFoundError as exc:
        hint = f"; {plugin.install_hint.strip()}" if plugin.install_hint else ""
        raise ExecError(f"{plugin.where}: exec.command {plugin.command!r} not found{hint}") from exc
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ExecError(f"{plugin.where}: exec.command {plugin.command!r}: {exc}") from exc
    if done.returncode != 0:
        stderr = done.stderr.decode(errors="replace").strip()
        raise ExecError(
            f"{plugin.where}: exec.command {plugin.command!r} exited {done.returncode}: {stderr}"
        )
    return parse_output(plugin, done.stdout)


def parse_output(plugin: ExecPlugin, stdout: bytes) -> ExecCredential:
    """The ExecCredential's ``status``; each kind of bad output names what is wrong."""
    where = f"{plugin.where}: exec.command {plugin.command!r} output"
    try:
        payload = json.loads(stdout)
    except ValueError as exc:
        raise ExecError(f"{where} is not JSON: {stdout[:80]!r}") from exc
    if not isinstance(payload, dict):
        raise ExecError(f"{where} is not a JSON object")
    if payload.get("kind") != "ExecCredential":
        raise ExecError(f"{where}: kind {payload.get('kind')!r} is not 'ExecCredential'")
    if payload.get("apiVersion") != plugin.api_version:
        raise ExecError(
            f"{where}: apiVersion {payload.get('apiVersion')!r} is not {plugin.api_version!r}"
        )
    status = payload.get("status")
    if not isinstance(status, dict):
        raise ExecError(f"{where}: no status")
    token = str(status.get("token") or "")
    cert = str(status.get("clientCertificateData") or "")
    key = str(status.get("clientKeyData") or "")
    if bool(cert) != bool(key):
        raise ExecError(f"{where}: status.clientCertificateData and clientKeyData come together")
    if not token and not cert:
        raise ExecError(f"{where}: status has neither token nor clientCertificateData")
    expires: float | None = None
    stamp = status.get("expirationTimestamp")
    if stamp:
        try:
            expires = datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp()
        except ValueError as exc:
            bad = f"{where}: status.expirationTimestamp {stamp!r} is not RFC 3339"
            raise ExecError(bad) from exc
    return ExecCredential(token=token, certificate_pem=cert, key_pem=key, expires=expires)
