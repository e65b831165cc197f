"""Where the API server is and how to authenticate: a kubeconfig or the pod's service account.

Why this module exists: the podgrouper's and the scheduler's client (:mod:`kubeapi.http`) and
kopf's watcher must talk to the same cluster as the same identity, so both are built
from one :class:`Credentials` value read here (``--kubeconfig``/``--context``,
``$KUBECONFIG``, ``~/.kube/config``, else in-cluster).  Only static credentials are
supported (token, token file, client certificate, CA); exec and auth-provider plugins
raise :class:`CredentialsError` naming the user entry.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")
TOKEN_FILE_TTL = 60.0
"""Seconds a token file's contents are reused (client-go re-reads its file once a minute)."""

_token_files: dict[str, tuple[float, str]] = {}  # path -> (read at, token)


class CredentialsError(Exception):
    """No usable credentials; names the file and entry that is wrong."""


@dataclass(frozen=True, slots=True)
class Credentials:
    """Connection settings; ``*_data`` fields are base64 as in a kubeconfig."""

    server: str
    ca_path: str = ""
    ca_data: str = ""
    insecure: bool = False
    token: str = ""
    token_path: str = ""
    certificate_path: str = ""
    certificate_data: str = ""
    key_path: str = ""
    key_data: str = ""
    namespace: str = "default"

    def bearer_token(self) -> str:
        """The token; a token file is re-read once a minute (service-account tokens
        rotate), not on every request."""
        if self.token_path:
            now = time.monotonic()
            cached = _token_files.get(self.token_path)
            if cached is not None and now - cached[0] < TOKEN_FILE_TTL:
                return cached[1]
            token = Path(self.token_path).read_text().strip()
            _token_files[self.token_path] = (now, token)
            return token
        return self.token


def _named(config: Mapping[str, Any], section: str, name: str, source: str) -> Mapping[str, Any]:
    for item in config.get(section) or []:
        if isinstance(item, Mapping) and item.get("name") == name:
            value = item.get(section[:-1]) or {}
            return value if isinstance(value, Mapping) else {}
    raise CredentialsError(f"kubeconfig {source}: no {section[:-1]} named {name!r}")


def from_kubeconfig(path: str, context: str = "") -> Credentials:
    """Credentials of ``context`` (default: the current context) in the kubeconfig ``path``."""
    source = Path(path).expanduser()
    try:
        config = yaml.safe_load(source.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise CredentialsError(f"kubeconfig {source}: cannot read: {exc}") from exc
    name = context or str(config.get("current-context") or "")
    if not name:
        raise CredentialsError(f"kubeconfig {source}: no current-context and no --context")
    ctx = _named(config, "contexts", name, str(source))
    cluster = _named(config, "clusters", str(ctx.get("cluster") or ""), str(source))
    user_name = str(ctx.get("user") or "")
    user = _named(config, "users", user_name, str(source)) if user_name else {}
    if "exec" in user or "auth-provider" in user:
        raise CredentialsError(
            f"kubeconfig {source}: user {user_name!r} uses an exec/auth-provider plugin; "
            "give it a token or a client certificate"
        )

    def local(key: str, entry: Mapping[str, Any]) -> str:
        value = str(entry.get(key) or "")
        return str(source.parent / value) if value and not os.path.isabs(value) else value

    server = str(cluster.get("server") or "")
    if not server:
        raise CredentialsError(f"kubeconfig {source}: cluster {ctx.get('cluster')!r} has no server")
    return Credentials(
        server=server.rstrip("/"),
        ca_path=local("certificate-authority", cluster),
        ca_data=str(cluster.get("certificate-authority-data") or ""),
        insecure=bool(cluster.get("insecure-skip-tls-verify")),
        token=str(user.get("token") or ""),
        token_path=local("tokenFile", user),
        certificate_path=local("client-certificate", user),
        certificate_data=str(user.get("client-certificate-data") or ""),
        key_path=local("client-key", user),
        key_data=str(user.get("client-key-data") or ""),
        namespace=str(ctx.get("namespace") or "default"),
    )


def in_cluster(
    environ: Mapping[str, str] = os.environ, account: Path = SERVICE_ACCOUNT
) -> Credentials:
    """The pod's service account (``KUBERNETES_SERVICE_HOST``/``_PORT`` and its files)."""
    host = environ.get("KUBERNETES_SERVICE_HOST", "")
    port = environ.get("KUBERNETES_SERVICE_PORT", "443")
    if not host or not (account / "token").exists():
        raise CredentialsError(
            f"not in a cluster: KUBERNETES_SERVICE_HOST unset or {account / 'token'} missing"
        )
    host = f"[{host}]" if ":" in host else host
    namespace_file = account / "namespace"
    return Credentials(
        server=f"https://{host}:{port}",
        ca_path=str(account / "ca.crt") if (account / "ca.crt").exists() else "",
        token_path=str(account / "token"),
        namespace=namespace_file.read_text().strip() if namespace_file.exists() else "default",
    )


def load(
    kubeconfig: str = "",
    context: str = "",
    environ: Mapping[str, str] = os.environ,
    account: Path = SERVICE_ACCOUNT,
) -> Credentials:
    """``kubeconfig`` if given; else ``$KUBECONFIG`` (first entry); else in-cluster; else
    ``~/.kube/config``."""
    path = kubeconfig or environ.get("KUBECONFIG", "").split(os.pathsep)[0]
    if path:
        return from_kubeconfig(path, context)
    if environ.get("KUBERNETES_SERVICE_HOST"):
        return in_cluster(environ, account)
    return from_kubeconfig("~/.kube/config", context)
