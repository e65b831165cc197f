"""``podmuster run webhooks``: a bad certificate or kubeconfig is one line, exit 2.

Nothing is served and no traceback is printed: the files are loaded before the
event loop starts.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from podmuster import cli


def run(capsys: pytest.CaptureFixture[str], *flags: str) -> tuple[int, str]:
    code = cli.main(["run", "webhooks", *flags])
    return code, capsys.readouterr().err.strip()


def test_missing_certificate_names_the_flags(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    absent = str(tmp_path / "absent.pem")
    code, err = run(capsys, f"--tls-cert-file={absent}", f"--tls-key-file={absent}")
    assert code == 2
    assert err.startswith("podmuster run webhooks: --tls-cert-file/--tls-key-file: ")
    assert absent in err
    assert "\n" not in err


def test_unreadable_kubeconfig_is_reported(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=webhooks", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    code, err = run(
        capsys,
        f"--tls-cert-file={cert}",
        f"--tls-key-file={key}",
        f"--kubeconfig={tmp_path / 'absent'}",
    )
    assert code == 2
    assert err.startswith("podmuster run webhooks: kubeconfig ")
    assert "absent" in err


def test_the_gpu_fraction_runtime_class_defaults_to_nvidia_as_kais() -> None:
    parse = cli.build_parser().parse_args
    certs = ["--tls-cert-file=c", "--tls-key-file=k"]
    assert parse(["run", "webhooks", *certs]).gpu_fraction_runtime_class_name == "nvidia"
    off = parse(["run", "webhooks", *certs, "--gpu-fraction-runtime-class-name="])
    assert off.gpu_fraction_runtime_class_name == ""
