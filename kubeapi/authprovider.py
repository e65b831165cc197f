"""Kubeconfig ``auth-provider`` users (``oidc``, the legacy ``gcp`` and ``azure``).

Why this module exists: older kubeconfigs keep a token written by a provider plugin
that client-go no longer ships.  What is still usable is the token itself: ``oidc``'s
``id-token`` while its JWT ``exp`` is in the future, ``gcp``'s ``access-token`` while
``expiry`` is in the future, ``azure``'s ``access-token`` while ``expires-on`` is.  An
expired token (or a provider we do not know) raises :class:`AuthProviderError` telling
the user which exec plugin replaces it (``kubelogin``, ``gke-gcloud-auth-plugin``), as
upstream kubectl does.  Refreshing an OIDC token through the issuer is not done here
(the ``kubelogin`` exec plugin does it).
"""

from __future__ import annotations

import base64
import json
import time
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
    if expires is not None and clock() >= expires:
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
