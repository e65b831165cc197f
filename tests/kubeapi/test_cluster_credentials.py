"""Credentials: kubeconfig current and named contexts, data and file fields (relative
paths resolved against the kubeconfig), token files re-read, an exec entry without apiVersion
and missing entries rejected with the file named, in-cluster service account, the lookup order, and
the TLS context built from them."""

from __future__ import annotations

import base64
import ssl
from pathlib import Path

import pytest
import yaml

from kubeapi import credentials, transport

CONFIG = {
    "current-context": "dev",
    "contexts": [
        {"name": "dev", "context": {"cluster": "c1", "user": "u1", "namespace": "team"}},
        {"name": "prod", "context": {"cluster": "c2", "user": "u2"}},
        {"name": "plugin", "context": {"cluster": "c2", "user": "u3"}},
    ],
    "clusters": [
        {
            "name": "c1",
            "cluster": {"server": "https://one:6443/", "insecure-skip-tls-verify": True},
        },
        {"name": "c2", "cluster": {"server": "https://two", "certificate-authority": "ca.pem"}},
    ],
    "users": [
        {"name": "u1", "user": {"token": "t1"}},
        {"name": "u2", "user": {"tokenFile": "token", "client-certificate-data": "Y2VydA=="}},
        {"name": "u3", "user": {"exec": {"command": "aws"}}},
    ],
}


@pytest.fixture
def kubeconfig(tmp_path: Path) -> Path:
    path = tmp_path / "config"
    path.write_text(yaml.safe_dump(CONFIG))
    (tmp_path / "token").write_text("t2\n")
    return path


def test_current_context(kubeconfig: Path) -> None:
    creds = credentials.from_kubeconfig(str(kubeconfig))
    assert creds == credentials.Credentials(
        server="https://one:6443", insecure=True, token="t1", namespace="team"
    )
    assert creds.bearer_token() == "t1"


def test_named_context_resolves_relative_paths(
    kubeconfig: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    creds = credentials.from_kubeconfig(str(kubeconfig), "prod")
    assert creds.ca_path == str(kubeconfig.parent / "ca.pem")
    assert creds.token_path == str(kubeconfig.parent / "token")
    assert creds.certificate_data == "Y2VydA=="
    assert creds.namespace == "default"
    assert creds.bearer_token() == "t2"
    (kubeconfig.parent / "token").write_text("rotated")
    assert creds.bearer_token() == "t2"  # reused for a minute, not read per request
    monkeypatch.setattr(credentials, "TOKEN_FILE_TTL", 0.0)
    assert creds.bearer_token() == "rotated"


@pytest.mark.parametrize(
    ("context", "problem"),
    [("plugin", "user 'u3': exec.apiVersion ''"), ("nope", "no context named 'nope'")],
)
def test_unusable_entries_are_named(kubeconfig: Path, context: str, problem: str) -> None:
    with pytest.raises(credentials.CredentialsError, match=problem):
        credentials.from_kubeconfig(str(kubeconfig), context)


def test_unreadable_kubeconfig(tmp_path: Path) -> None:
    with pytest.raises(credentials.CredentialsError, match="cannot read"):
        credentials.from_kubeconfig(str(tmp_path / "missing"))


def test_in_cluster(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("sa")
    (tmp_path / "namespace").write_text("kai-scheduler")
    env = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    creds = credentials.in_cluster(env, tmp_path)
    assert creds.server == "https://10.0.0.1:443"
    assert creds.namespace == "kai-scheduler"
    assert creds.bearer_token() == "sa"
    assert credentials.load(environ=env, account=tmp_path) == creds
    with pytest.raises(credentials.CredentialsError, match="not in a cluster"):
        credentials.in_cluster({}, tmp_path)


def test_explicit_and_env_kubeconfig_win(kubeconfig: Path, tmp_path: Path) -> None:
    env = {"KUBECONFIG": str(kubeconfig), "KUBERNETES_SERVICE_HOST": "10.0.0.1"}
    assert credentials.load(environ=env, account=tmp_path).server == "https://one:6443"
    assert credentials.load(str(kubeconfig), "prod", environ={}).server == "https://two"


def test_tls_context() -> None:
    assert transport.ssl_context(credentials.Credentials(server="s", insecure=True)) is False
    bogus = base64.b64encode(b"not a certificate").decode()
    with pytest.raises(ssl.SSLError):
        transport.ssl_context(credentials.Credentials(server="s", ca_data=bogus))
