"""Kubeconfig ``auth-provider`` users (``oidc``, the legacy ``gcp`` and ``azure``).

Why this module exists: older kubeconfigs keep a token written by a provider plugin
that client-go no longer ships.  What is still usable is the token itself: ``oidc``'s
``id-token`` while its JWT ``exp`` is in the future, ``gcp``'s ``access-token`` while
``expiry`` is in the future, ``azure``'s ``access-token`` while ``expires-on`` is.  An
expired token (or a provider we do not know) raises :class:`AuthProviderError` telling
the user which exec plugin replaces it (``kubelogin``, ``gke-gcloud-auth-plugin``), as
upstream kubectl does.  An expired OIDC ``id-token`` with a ``refresh-token`` and an
``idp-issuer-url`` is refreshed once at start-up through the issuer's token endpoint
(OpenID discovery, ``grant_type=refresh_token`` with ``client-id``/``client-secret``);
the new token is not written back to the kubeconfig, and a process running past its
expiry gets 401s (``kubelogin`` refreshes for as long as it runs).
"""

from __future__ import annotations

import base64
import json
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

REPLACEMENT = {
    "gcp": "the exec plugin gke-gcloud-auth-plugin "
    "(https://cloud.google.com/kubernetes-engine/docs/how-to/cluster-access-for-kubectl)",
    "azure": "the exec plugin kubelogin (https://azure.github.io/kubelogin/)",
    "oidc": "the exec plugin kubelogin (https://github.com/int128/kubelogin)",
}


class AuthProviderError(Exception):
    """The provider's cached token is missing, expired or unreadable."""


def token(provider: Mapping[str, Any], where: str, clock: Callable[[], float] = time.time) -> str:
    """The provider's cached token while it is valid."""
    name = str(provider.get("name") or "")
    config = provider.get("config") or {}
    if not isinstance(config, Mapping):
        raise AuthProviderError(f"{where}: auth-provider.config is not a mapping")
    replace = REPLACEMENT.get(name)
    if replace is None:
        raise AuthProviderError(f"{where}: auth-provider {name!r} is not supported; use exec")
    key = "id-token" if name == "oidc" else "access-token"
    value = str(config.get(key) or "")
    if not value:
        raise AuthProviderError(f"{where}: auth-provider {name} has no {key}; use {replace}")
    expires = _expiry(name, config, value, where)
    expired = expires is not None and clock() >= expires
    refreshable = name == "oidc" and config.get("refresh-token") and config.get("idp-issuer-url")
    if expired and refreshable:
        return refresh_oidc(config, where)
    if expired:
        raise AuthProviderError(
            f"{where}: auth-provider {name} {key} expired and cannot be refreshed here; "
            f"use {replace}"
        )
    return value


def _expiry(name: str, config: Mapping[str, Any], value: str, where: str) -> float | None:
    try:
        if name == "oidc":
            part = value.split(".")[1]
            claims = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
            return float(claims["exp"]) if "exp" in claims else None
        if name == "gcp" and config.get("expiry"):
            stamp = str(config["expiry"]).replace("Z", "+00:00")
            return datetime.fromisoformat(stamp).timestamp()
        if name == "azure" and config.get("expires-on"):
            return float(config["expires-on"])
    except (IndexError, KeyError, ValueError, TypeError) as exc:
        bad = f"{where}: auth-provider {name}: cannot read expiry: {exc}"
        raise AuthProviderError(bad) from exc
    return None


def refresh_oidc(config: Mapping[str, Any], where: str, timeout: float = 30.0) -> str:
    """A new ``id_token`` from the issuer's token endpoint for the ``refresh-token``."""
    issuer = str(config["idp-issuer-url"]).rstrip("/")
    context = _issuer_tls(config)
    try:
        discovery_url = f"{issuer}/.well-known/openid-configuration"
        with urllib.request.urlopen(discovery_url, timeout=timeout, context=context) as reply:
            endpoint = str(json.loads(reply.read())["token_endpoint"])
        form = {"grant_type": "refresh_token", "refresh_token": str(config["refresh-token"])}
        form["client_id"] = str(config.get("client-id") or "")
        if config.get("client-secret"):
            form["client_secret"] = str(config["client-secret"])
        body = urllib.parse.urlencode(form).encode()
        request = urllib.request.Request(endpoint, data=body, method="POST")
        request.add_header("Content-Type", "application/x-www-form-urlencoded")
        with urllib.request.urlopen(request, timeout=timeout, context=context) as reply:
            tokens = json.loads(reply.read())
    except (OSError, ValueError, KeyError, urllib.error.URLError) as exc:
        raise AuthProviderError(
            f"{where}: auth-provider oidc: refreshing the id-token at {issuer} failed: {exc}; "
            f"use {REPLACEMENT['oidc']}"
        ) from exc
    fresh = tokens.get("id_token") if isinstance(tokens, dict) else None
    if not fresh:
        raise AuthProviderError(f"{where}: auth-provider oidc: the issuer returned no id_token")
    return str(fresh)


def _issuer_tls(config: Mapping[str, Any]) -> ssl.SSLContext:
    data = config.get("idp-certificate-authority-data")
    return ssl.create_default_context(
        cafile=str(config.get("idp-certificate-authority") or "") or None,
        cadata=base64.b64decode(str(data)).decode() if data else None,
    )
