"""Exec credential plugins with a real plugin script (it counts its runs in a file):
v1 and v1beta1, args/env/KUBERNETES_EXEC_INFO, caching until a little before the expiry,
a 401 re-running the plugin once, a plugin client certificate in the TLS context, each
kind of bad output with its error text, a missing command with its installHint; and the
auth-provider tokens (oidc, gcp, azure) used while valid, else an error naming the exec
plugin that replaces them."""

from __future__ import annotations

import asyncio
import base64
import json
import shutil
import ssl
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp import web
from aiohttp.test_utils import TestServer

from kubeapi import authprovider, credentials, execauth, transport
from kubeapi import errors as kube
from kubeapi import http as kubehttp

V1 = "client.authentication.k8s.io/v1"
V1BETA1 = "client.authentication.k8s.io/v1beta1"

PLUGIN = """#!{python}
import json, os, pathlib, sys
here = pathlib.Path(__file__).parent
calls = here / "calls"
n = len(calls.read_text().splitlines()) if calls.exists() else 0
seen = {{"info": json.loads(os.environ["KUBERNETES_EXEC_INFO"]), "argv": sys.argv[1:],
        "foo": os.environ.get("FOO", "")}}
with calls.open("a") as f:
    f.write(json.dumps(seen) + "\\n")
replies = json.loads((here / "replies.json").read_text())
reply = replies[min(n, len(replies) - 1)]
sys.stderr.write(reply.get("stderr", ""))
out = reply["stdout"]
sys.stdout.write(out if isinstance(out, str) else json.dumps(out))
sys.exit(reply.get("exit", 0))
"""


def stamp(seconds_from_now: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + seconds_from_now))


def cred(status: dict[str, Any] | None, api_version: str = V1) -> dict[str, Any]:
    out: dict[str, Any] = {"apiVersion": api_version, "kind": "ExecCredential"}
    if status is not None:
        out["status"] = status
    return out


class Plugin:
    """A plugin script in its own directory and a kubeconfig whose user runs it."""

    def __init__(self, tmp: Path, replies: list[dict[str, Any]], **exec_fields: Any) -> None:
        self.dir = tmp
        script = tmp / "plugin.py"
        script.write_text(PLUGIN.format(python=sys.executable))
        script.chmod(0o755)
        (tmp / "replies.json").write_text(json.dumps(replies))
        entry = {"apiVersion": V1, "command": "./plugin.py", **exec_fields}
        config = {
            "current-context": "c",
            "contexts": [{"name": "c", "context": {"cluster": "k", "user": "me"}}],
            "clusters": [{"name": "k", "cluster": {"server": "https://k.example:6443"}}],
            "users": [{"name": "me", "user": {"exec": entry}}],
        }
        self.kubeconfig = tmp / "config"
        self.kubeconfig.write_text(yaml.safe_dump(config))

    def creds(self, server: str = "") -> credentials.Credentials:
        loaded = credentials.from_kubeconfig(str(self.kubeconfig))
        if server:
            return credentials.Credentials(server=server, exec_plugin=loaded.exec_plugin)
        return loaded

    def calls(self) -> list[dict[str, Any]]:
        path = self.dir / "calls"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.parametrize("api_version", [V1, V1BETA1])
def test_plugin_gets_args_env_and_exec_info_and_its_token_is_used(
    tmp_path: Path, api_version: str
) -> None:
    plugin = Plugin(
        tmp_path,
        [{"stdout": cred({"token": "tok"}, api_version)}],
        apiVersion=api_version,
        args=["get-token", "--x"],
        env=[{"name": "FOO", "value": "bar"}],
        provideClusterInfo=True,
    )
    creds = plugin.creds()
    assert creds.bearer_token() == "tok"
    (seen,) = plugin.calls()
    assert seen["argv"] == ["get-token", "--x"]
    assert seen["foo"] == "bar"
    assert seen["info"]["apiVersion"] == api_version
    assert seen["info"]["kind"] == "ExecCredential"
    assert seen["info"]["spec"]["interactive"] is False
    assert seen["info"]["spec"]["cluster"]["server"] == "https://k.example:6443"


def test_cluster_info_only_when_asked(tmp_path: Path) -> None:
    plugin = Plugin(tmp_path, [{"stdout": cred({"token": "tok"})}])
    plugin.creds().bearer_token()
    assert "cluster" not in plugin.calls()[0]["info"]["spec"]


def test_token_cached_until_a_little_before_expiry(tmp_path: Path) -> None:
    expiry = stamp(3600)
    plugin = Plugin(tmp_path, [{"stdout": cred({"token": "t", "expirationTimestamp": expiry})}])
    creds = plugin.creds()
    assert creds.bearer_token() == creds.bearer_token() == "t"
    assert len(plugin.calls()) == 1
    assert creds.exec_plugin is not None
    expires = execauth.credential(creds.exec_plugin).expires
    assert expires is not None
    # still cached just outside the refresh margin; run again inside it
    execauth.credential(creds.exec_plugin, clock=lambda: expires - execauth.REFRESH_MARGIN - 1)
    assert len(plugin.calls()) == 1
    execauth.credential(creds.exec_plugin, clock=lambda: expires - execauth.REFRESH_MARGIN + 1)
    assert len(plugin.calls()) == 2


def test_no_expiry_is_cached_until_invalidated(tmp_path: Path) -> None:
    plugin = Plugin(tmp_path, [{"stdout": cred({"token": "a"})}, {"stdout": cred({"token": "b"})}])
    creds = plugin.creds()
    assert [creds.bearer_token() for _ in range(3)] == ["a", "a", "a"]
    assert creds.invalidate() is True
    assert creds.bearer_token() == "b"
    assert len(plugin.calls()) == 2


def test_static_credentials_have_nothing_to_invalidate() -> None:
    assert credentials.Credentials(server="https://x", token="t").invalidate() is False


def run_against(
    creds: credentials.Credentials,
    accepted: str,
    call: Callable[[kubehttp.KubeHttp], Awaitable[Any]] = lambda c: c.get("v1", "Pod", "ns", "p"),
) -> tuple[Any, list[str]]:
    """``call`` (GET a pod) on a server that accepts only ``Bearer accepted``."""
    seen: list[str] = []

    async def handle(request: web.Request) -> web.StreamResponse:
        seen.append(request.headers.get("Authorization", ""))
        if request.headers.get("Authorization") != f"Bearer {accepted}":
            return web.json_response({"message": "Unauthorized"}, status=401)
        return web.json_response({"metadata": {"name": "p"}})

    async def main() -> Any:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", handle)
        server = TestServer(app)
        await server.start_server()
        client = kubehttp.KubeHttp(
            credentials.Credentials(
                server=str(server.make_url("")).rstrip("/"), exec_plugin=creds.exec_plugin
            )
        )
        try:
            return await call(client)
        except kube.ApiError as exc:
            return exc
        finally:
            await client.close()
            await server.close()

    return asyncio.run(main()), seen


def test_401_runs_the_plugin_again_and_retries_once(tmp_path: Path) -> None:
    plugin = Plugin(
        tmp_path, [{"stdout": cred({"token": "stale"})}, {"stdout": cred({"token": "fresh"})}]
    )
    got, seen = run_against(plugin.creds(), accepted="fresh")
    assert got["metadata"]["name"] == "p"
    assert seen == ["Bearer stale", "Bearer fresh"]
    assert len(plugin.calls()) == 2


def test_401_again_after_the_retry_is_the_error(tmp_path: Path) -> None:
    plugin = Plugin(tmp_path, [{"stdout": cred({"token": "wrong"})}])
    got, seen = run_against(plugin.creds(), accepted="right")
    assert isinstance(got, kube.ApiError)
    assert seen == ["Bearer wrong", "Bearer wrong"]
    assert len(plugin.calls()) == 2


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ({"stdout": "hello"}, "output is not JSON: b'hello'"),
        ({"stdout": "[1]"}, "output is not a JSON object"),
        ({"stdout": {"apiVersion": V1, "kind": "Pod"}}, "kind 'Pod' is not 'ExecCredential'"),
        ({"stdout": cred({"token": "t"}, V1BETA1)}, f"apiVersion '{V1BETA1}' is not '{V1}'"),
        ({"stdout": cred(None)}, "output: no status"),
        ({"stdout": cred({})}, "status has neither token nor clientCertificateData"),
        ({"stdout": cred({"clientCertificateData": "x"})}, "come together"),
        (
            {"stdout": cred({"token": "t", "expirationTimestamp": "soon"})},
            "expirationTimestamp 'soon' is not RFC 3339",
        ),
        ({"stdout": "", "stderr": "no profile foo", "exit": 3}, "exited 3: no profile foo"),
    ],
)
def test_bad_output_names_kubeconfig_user_and_problem(
    tmp_path: Path, reply: dict[str, Any], problem: str
) -> None:
    creds = Plugin(tmp_path, [reply]).creds()
    with pytest.raises(credentials.CredentialsError) as caught:
        creds.bearer_token()
    assert f"kubeconfig {tmp_path / 'config'}: user 'me'" in str(caught.value)
    assert problem in str(caught.value)


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"apiVersion": "client.authentication.k8s.io/v1alpha1"}, "exec.apiVersion"),
        ({"command": ""}, "exec.command is empty"),
        ({"args": "x"}, "exec.args is not a list"),
        ({"env": [{"value": "v"}]}, "has no name"),
        ({"interactiveMode": "Always"}, "interactiveMode is Always"),
    ],
)
def test_bad_exec_entries_fail_at_load(
    tmp_path: Path, fields: dict[str, Any], problem: str
) -> None:
    plugin = Plugin(tmp_path, [], **fields)
    with pytest.raises(credentials.CredentialsError, match=problem):
        plugin.creds()


def test_missing_command_shows_the_install_hint(tmp_path: Path) -> None:
    plugin = Plugin(
        tmp_path, [], command="aws-iam-authenticator-missing", installHint="install it from X"
    )
    with pytest.raises(credentials.CredentialsError) as caught:
        plugin.creds().bearer_token()
    assert "'aws-iam-authenticator-missing' not found; install it from X" in str(caught.value)


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")
def test_plugin_client_certificate_reaches_the_tls_context(tmp_path: Path) -> None:
    crt, key = self_signed(tmp_path, "me")
    status = {"clientCertificateData": crt, "clientKeyData": key}
    creds = Plugin(tmp_path, [{"stdout": cred(status)}]).creds()
    assert creds.bearer_token() == ""
    assert creds.client_certificate_pem() == (crt, key)
    context = transport.ssl_context(creds)
    assert isinstance(context, ssl.SSLContext)


def jwt(claims: dict[str, Any]) -> str:
    body = base64.urlsafe_b64encode(json.dumps(claims).encode()).decode().rstrip("=")
    return f"e30.{body}.sig"


# Expiries are far ahead of collection time: the parameters are built when the
# suite is collected, which can be many minutes before this test runs.
VALID_FOR = 30 * 24 * 3600.0


@pytest.mark.parametrize(
    ("provider", "token"),
    [
        ({"name": "oidc", "config": {"id-token": jwt({"exp": time.time() + VALID_FOR})}}, "oidc"),
        ({"name": "gcp", "config": {"access-token": "g", "expiry": stamp(VALID_FOR)}}, "g"),
        (
            {
                "name": "azure",
                "config": {"access-token": "a", "expires-on": time.time() + VALID_FOR},
            },
            "a",
        ),
        ({"name": "gcp", "config": {"access-token": "g"}}, "g"),
    ],
)
def test_auth_provider_token_used_while_valid(
    tmp_path: Path, provider: dict[str, Any], token: str
) -> None:
    expected = provider["config"].get("id-token") if token == "oidc" else token
    config = {
        "current-context": "c",
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "me"}}],
        "clusters": [{"name": "k", "cluster": {"server": "https://k"}}],
        "users": [{"name": "me", "user": {"auth-provider": provider}}],
    }
    (tmp_path / "config").write_text(yaml.safe_dump(config))
    assert credentials.from_kubeconfig(str(tmp_path / "config")).bearer_token() == expected


@pytest.mark.parametrize(
    ("provider", "problem"),
    [
        (
            {"name": "oidc", "config": {"id-token": jwt({"exp": 1}), "refresh-token": "r"}},
            "oidc id-token expired and cannot be refreshed here; use the exec plugin kubelogin",
        ),
        (
            {"name": "gcp", "config": {"access-token": "g", "expiry": "2001-01-01T00:00:00Z"}},
            "gcp access-token expired and cannot be refreshed here; "
            "use the exec plugin gke-gcloud-auth-plugin",
        ),
        (
            {"name": "azure", "config": {}},
            "azure has no access-token; use the exec plugin kubelogin",
        ),
        ({"name": "oidc", "config": {"id-token": "notajwt"}}, "oidc: cannot read expiry"),
        ({"name": "openstack", "config": {}}, "auth-provider 'openstack' is not supported"),
    ],
)
def test_auth_provider_problems_name_the_replacement(
    provider: dict[str, Any], problem: str
) -> None:
    with pytest.raises(authprovider.AuthProviderError) as caught:
        authprovider.token(provider, "kubeconfig f: user 'me'")
    assert problem in str(caught.value)


def test_load_runs_a_broken_plugin_at_once(tmp_path: Path) -> None:
    plugin = Plugin(tmp_path, [{"stdout": "", "stderr": "expired SSO session", "exit": 1}])
    with pytest.raises(credentials.CredentialsError, match="exited 1: expired SSO session"):
        credentials.load(str(plugin.kubeconfig))
    assert len(plugin.calls()) == 1


def test_a_plugin_failing_later_is_a_transient_request_error(tmp_path: Path) -> None:
    plugin = Plugin(tmp_path, [{"stdout": cred({"token": "t"})}, {"stdout": "", "exit": 1}])
    creds = credentials.load(str(plugin.kubeconfig))
    creds.invalidate()
    got, seen = run_against(creds, accepted="t")
    assert isinstance(got, kube.TransientError)
    assert "exited 1" in str(got)
    assert seen == []


class Issuer:
    """An OIDC issuer on localhost: discovery and a token endpoint recording its forms."""

    def __init__(self, id_token: str | None) -> None:
        import http.server
        import threading
        import urllib.parse

        self.forms: list[dict[str, list[str]]] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *_: Any) -> None:
                pass

            def reply(self, payload: dict[str, Any]) -> None:
                raw = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def do_GET(self) -> None:
                self.reply({"token_endpoint": f"{outer.url}/token"})

            def do_POST(self) -> None:
                length = int(self.headers["Content-Length"])
                outer.forms.append(urllib.parse.parse_qs(self.rfile.read(length).decode()))
                self.reply({"id_token": id_token} if id_token else {})

        self.server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_expired_oidc_token_is_refreshed_at_the_issuer() -> None:
    issuer = Issuer(id_token="new-id-token")
    try:
        config = {"id-token": jwt({"exp": 1}), "refresh-token": "r1", "client-id": "cid"}
        config |= {"client-secret": "sec", "idp-issuer-url": issuer.url}
        got = authprovider.token({"name": "oidc", "config": config}, "kubeconfig f: user 'me'")
    finally:
        issuer.close()
    assert got == "new-id-token"
    (form,) = issuer.forms
    assert form == {
        "grant_type": ["refresh_token"],
        "refresh_token": ["r1"],
        "client_id": ["cid"],
        "client_secret": ["sec"],
    }


def test_an_issuer_giving_no_id_token_is_an_error() -> None:
    issuer = Issuer(id_token=None)
    try:
        config = {"id-token": jwt({"exp": 1}), "refresh-token": "r", "idp-issuer-url": issuer.url}
        with pytest.raises(authprovider.AuthProviderError, match="returned no id_token"):
            authprovider.token({"name": "oidc", "config": config}, "kubeconfig f: user 'me'")
    finally:
        issuer.close()


def test_an_unreachable_issuer_names_it_and_the_replacement() -> None:
    config = {
        "id-token": jwt({"exp": 1}),
        "refresh-token": "r",
        "idp-issuer-url": "http://127.0.0.1:1",
    }
    with pytest.raises(authprovider.AuthProviderError) as caught:
        authprovider.token({"name": "oidc", "config": config}, "kubeconfig f: user 'me'")
    assert "refreshing the id-token at http://127.0.0.1:1 failed" in str(caught.value)
    assert "kubelogin" in str(caught.value)


def test_bind_on_keepalive_connections_also_retries_a_401_once(tmp_path: Path) -> None:
    plugin = Plugin(
        tmp_path, [{"stdout": cred({"token": "stale"})}, {"stdout": cred({"token": "fresh"})}]
    )
    got, seen = run_against(plugin.creds(), "fresh", lambda c: c.bind("ns", "p", "n1"))
    assert got is None
    assert seen == ["Bearer stale", "Bearer fresh"]
    assert len(plugin.calls()) == 2


def self_signed(directory: Path, name: str) -> tuple[str, str]:
    key, crt = directory / f"{name}.key", directory / f"{name}.crt"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}"),
            *("-days", "1", "-keyout", str(key), "-out", str(crt)),
        ],
        check=True,
        capture_output=True,
    )
    return crt.read_text(), key.read_text()


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")
def test_a_rotated_plugin_certificate_gets_a_new_session(tmp_path: Path) -> None:
    (crt_a, key_a), (crt_b, key_b) = self_signed(tmp_path, "a"), self_signed(tmp_path, "b")
    replies = [
        {"stdout": cred({"clientCertificateData": crt_a, "clientKeyData": key_a})},
        {"stdout": cred({"clientCertificateData": crt_b, "clientKeyData": key_b})},
    ]
    creds = Plugin(tmp_path, replies).creds("https://k.example:6443")

    async def main() -> tuple[bool, bool, int]:
        client = kubehttp.KubeHttp(creds)
        try:
            first = client._client()
            same = client._client() is first
            creds.invalidate()  # the plugin now prints certificate b
            rotated = client._client() is not first
            return same, rotated, len(client._retired)
        finally:
            await client.close()

    assert asyncio.run(main()) == (True, True, 1)


def test_a_refused_watch_forgets_the_credential_for_the_next_watch(tmp_path: Path) -> None:
    plugin = Plugin(
        tmp_path, [{"stdout": cred({"token": "stale"})}, {"stdout": cred({"token": "fresh"})}]
    )

    async def first_event(client: kubehttp.KubeHttp) -> Any:
        async for event in client.watch("v1", "Pod", "1", "ns"):
            return event
        return None

    got, seen = run_against(plugin.creds(), "fresh", first_event)
    assert isinstance(got, kube.ApiError)
    assert seen == ["Bearer stale"]
    assert plugin.creds().bearer_token() == "fresh"  # the next watch start runs it again
    assert len(plugin.calls()) == 2


def test_a_plugin_failing_on_the_watch_path_is_transient_too(tmp_path: Path) -> None:
    plugin = Plugin(tmp_path, [{"stdout": cred({"token": "t"})}, {"stdout": "", "exit": 1}])
    creds = credentials.load(str(plugin.kubeconfig))
    creds.invalidate()

    async def first_event(client: kubehttp.KubeHttp) -> Any:
        async for event in client.watch("v1", "Pod", "1", "ns"):
            return event
        return None

    got, seen = run_against(creds, "t", first_event)
    assert isinstance(got, kube.TransientError)
    assert seen == []
