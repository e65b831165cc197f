"""kopf's login with an exec-plugin kubeconfig user: the first login uses the plugin's
token and tells kopf to log in again a little before its expiry; every later login (kopf
logs in again on a 401 or at that expiration) runs the plugin again."""

from __future__ import annotations

import datetime
import sys
from pathlib import Path

import yaml
from podgrouper_objects import SETTINGS

from integrations import registry
from kubeapi import credentials, execauth
from podgrouper import cli

PLUGIN = """#!{python}
import json, pathlib
calls = pathlib.Path(__file__).parent / "calls"
n = len(calls.read_text()) if calls.exists() else 0
calls.write_text("x" * (n + 1))
print(json.dumps({{"apiVersion": "client.authentication.k8s.io/v1beta1",
    "kind": "ExecCredential",
    "status": {{"token": f"token-{{n}}", "expirationTimestamp": "2999-01-01T00:00:00Z"}}}}))
"""


def test_login_runs_the_plugin_again_after_the_first(tmp_path: Path) -> None:
    script = tmp_path / "plugin.py"
    script.write_text(PLUGIN.format(python=sys.executable))
    script.chmod(0o755)
    config = {
        "current-context": "c",
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "me"}}],
        "clusters": [{"name": "k", "cluster": {"server": "https://k:6443"}}],
        "users": [
            {
                "name": "me",
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1beta1",
                        "command": str(script),
                    }
                },
            }
        ],
    }
    (tmp_path / "config").write_text(yaml.safe_dump(config))
    creds = credentials.from_kubeconfig(str(tmp_path / "config"))
    op = cli.build_operator_registry(SETTINGS, creds, registry.build_registry())
    login = {str(h.id): h.fn for h in op._activities.get_all_handlers()}["podgrouper/login"]
    first = login()
    assert first.token == "token-0"
    expires = datetime.datetime(2999, 1, 1, tzinfo=datetime.UTC).timestamp()
    assert first.expiration is not None
    assert first.expiration.timestamp() == expires - execauth.REFRESH_MARGIN
    assert login().token == "token-1"
    assert (tmp_path / "calls").read_text() == "xx"
