"""Where the API server is and how to authenticate: a kubeconfig or the pod's service account.

Why this module exists: the podgrouper's and the scheduler's client (:mod:`kubeapi.http`) and
kopf's watcher must talk to the same cluster as the same identity, so both are built
from one :class:`Credentials` value read here (``--kubeconfig``/``--context``,
``$KUBECONFIG``, ``~/.kube/config``, else in-cluster).  Supported users: a token, a
token file, a client certificate, an ``exec`` credential plugin (:mod:`kubeapi.execauth`:
run, cached until its expiry, forgotten on a 401) and the cached token of an
``auth-provider`` (:mod:`kubeapi.authprovider`).  A bad entry raises
:class:`CredentialsError` naming the kubeconfig, the user and the field.  A ``$KUBECONFIG`` list is
merged by :mod:`kubeapi.kubeconfigs`.

The official ``kubernetes`` package (37.0.2) was evaluated and is not used, nor added to
an extra: importing ``kubernetes.config.kube_config`` takes about 230 ms against 42 ms
for this module (``python -X importtime``, yaml included); its ``ExecProvider`` makes the
plugin interactive whenever stdout is a terminal, ignores ``installHint``, keeps no
expiry for exec tokens, and its errors name neither the kubeconfig nor the user; its
``gcp`` provider needs ``google-auth``.  The kubeconfig format is small enough to read
here with those gaps closed.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubeapi import authprovider, execauth, kubeconfigs

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
    exec_plugin: execauth.ExecPlugin | None = None

    def bearer_token(self) -> str:
        """The token; a token file is re-read once a minute (service-account tokens
        rotate), not on every request; an exec plugin's token is cached until it expires."""
        if self.exec_plugin is not None:
            return self.exec_credential().token
        if self.token_path:
            now = time.monotonic()
            cached = _token_files.get(self.token_path)
            if cached is not None and now - cached[0] < TOKEN_FILE_TTL:
                return cached[1]
            token = Path(self.token_path).read_text().strip()
            _token_files[self.token_path] = (now, token)
            return token
        return self.token

    def exec_credential(self) -> execauth.ExecCredential:
        """The exec plugin's current credential (run when none is cached or it expires)."""
        if self.exec_plugin is None:
            return execauth.ExecCredential(token=self.token)
        try:
            return execauth.credential(self.exec_plugin)
        except execauth.ExecError as exc:
            raise CredentialsError(str(exc)) from exc

    def client_certificate_pem(self) -> tuple[str, str]:
        """The exec plugin's PEM client certificate and key (empty without one)."""
        if self.exec_plugin is None:
            return "", ""
        current = self.exec_credential()
        return current.certificate_pem, current.key_pem

    def invalidate(self) -> bool:
        """Forget a refreshable credential after a 401; True when a retry can help."""
        if self.exec_plugin is None:
            return False
        execauth.invalidate(self.exec_plugin)
        return True


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
        config = kubeconfigs.read(source)
    except kubeconfigs.KubeconfigError as exc:
        raise CredentialsError(str(exc)) from exc
    return _from_config(config, source, context)


def from_kubeconfigs(paths: Sequence[str], context: str = "") -> Credentials:
    """Credentials of ``context`` in the merge of ``paths`` (a ``$KUBECONFIG`` list)."""
    label = Path(os.pathsep.join(paths))
    try:
        config = kubeconfigs.merge(paths)
    except kubeconfigs.KubeconfigError as exc:
        raise CredentialsError(str(exc)) from exc
    return _from_config(config, label, context)


def _from_config(config: Mapping[str, Any], source: Path, context: str) -> Credentials:
    name = context or str(config.get("current-context") or "")
    if not name:
        raise CredentialsError(f"kubeconfig {source}: no current-context and no --context")
    ctx = _named(config, "contexts", name, str(source))
    cluster = _named(config, "clusters", str(ctx.get("cluster") or ""), str(source))
    user_name = str(ctx.get("user") or "")
    user = _named(config, "users", user_name, str(source)) if user_name else {}
    where = f"kubeconfig {source}: user {user_name!r}"
    plugin: execauth.ExecPlugin | None = None
    token = str(user.get("token") or "")
    try:
        if isinstance(user.get("exec"), Mapping):
            plugin = execauth.parse_plugin(user["exec"], where, source.parent, cluster)
        elif isinstance(user.get("auth-provider"), Mapping):
            token = authprovider.token(user["auth-provider"], where)
    except (execauth.ExecError, authprovider.AuthProviderError) as exc:
        raise CredentialsError(str(exc)) from exc

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
        token=token,
        token_path=local("tokenFile", user),
        certificate_path=local("client-certificate", user),
        certificate_data=str(user.get("client-certificate-data") or ""),
        key_path=local("client-key", user),
        key_data=str(user.get("client-key-data") or ""),
        namespace=str(ctx.get("namespace") or "default"),
        exec_plugin=plugin,
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
    """``kubeconfig`` if given; else ``$KUBECONFIG`` (its files merged as kubectl does);
    else in-cluster; else ``~/.kube/config``.  An exec plugin runs here once (its errors
    raise here)."""
    if kubeconfig:
        return _checked(from_kubeconfig(kubeconfig, context))
    paths = [p for p in environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    if len(paths) == 1:
        return _checked(from_kubeconfig(paths[0], context))
    if paths:
        return _checked(from_kubeconfigs(paths, context))
    if environ.get("KUBERNETES_SERVICE_HOST"):
        return in_cluster(environ, account)
    return _checked(from_kubeconfig("~/.kube/config", context))


def _checked(creds: Credentials) -> Credentials:
    """An exec plugin runs once at start-up, so a broken one fails before any request."""
    creds.exec_credential()
    return creds
