"""Certificates for a throw-away control plane, made with the ``openssl`` CLI.

kube-apiserver needs a serving certificate, a client CA and a service-account
key pair; clients (kubectl, kube-controller-manager, kwok, operators) log in
with client certificates signed by that CA. The venv has no ``cryptography``
package, and the ``openssl`` command is on every Debian machine.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path


def _openssl(*args: str) -> None:
    exe = shutil.which("openssl")
    if exe is None:
        raise RuntimeError("the openssl command is needed (apt-get install openssl)")
    subprocess.run([exe, *args], check=True, capture_output=True)


@dataclass(frozen=True)
class ClientCert:
    """A client certificate and its key, for a kubeconfig user."""

    cert: Path
    key: Path


@dataclass(frozen=True)
class Pki:
    """Everything kube-apiserver is started with, in one directory."""

    dir: Path

    @property
    def ca_cert(self) -> Path:
        return self.dir / "ca.crt"

    @property
    def ca_key(self) -> Path:
        return self.dir / "ca.key"

    @property
    def serving_cert(self) -> Path:
        return self.dir / "apiserver.crt"

    @property
    def serving_key(self) -> Path:
        return self.dir / "apiserver.key"

    @property
    def sa_key(self) -> Path:
        return self.dir / "sa.key"

    @property
    def sa_pub(self) -> Path:
        return self.dir / "sa.pub"

    @classmethod
    def create(cls, directory: Path) -> Pki:
        directory.mkdir(parents=True, exist_ok=True)
        pki = cls(directory)
        _openssl(
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
            "-subj", "/CN=podmuster-e2e-ca",
            "-keyout", str(pki.ca_key), "-out", str(pki.ca_cert),
        )  # fmt: skip
        pki._sign(
            "apiserver",
            "/CN=kube-apiserver",
            "subjectAltName=IP:127.0.0.1,DNS:localhost,IP:10.0.0.1,DNS:kubernetes.default.svc\n"
            "extendedKeyUsage=serverAuth\n",
        )
        _openssl("genrsa", "-out", str(pki.sa_key), "2048")
        _openssl("rsa", "-in", str(pki.sa_key), "-pubout", "-out", str(pki.sa_pub))
        return pki

    def client(self, user: str, groups: tuple[str, ...] = ()) -> ClientCert:
        """A client certificate: CN is the user name, each O a group."""
        subject = f"/CN={user}" + "".join(f"/O={g}" for g in groups)
        name = f"client-{user.replace(':', '_')}"
        self._sign(name, subject, "extendedKeyUsage=clientAuth\n")
        return ClientCert(self.dir / f"{name}.crt", self.dir / f"{name}.key")

    def server(self, name: str) -> ClientCert:
        """A serving certificate for 127.0.0.1 (a webhook the API server calls)."""
        extensions = "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n"
        self._sign(name, f"/CN={name}", extensions)
        return ClientCert(self.dir / f"{name}.crt", self.dir / f"{name}.key")

    def _sign(self, name: str, subject: str, extensions: str) -> None:
        key, csr, crt = (self.dir / f"{name}.{ext}" for ext in ("key", "csr", "crt"))
        ext_file = self.dir / f"{name}.ext"
        ext_file.write_text(extensions)
        _openssl(
            "req", "-new", "-newkey", "rsa:2048", "-nodes",
            "-subj", subject, "-keyout", str(key), "-out", str(csr),
        )  # fmt: skip
        _openssl(
            "x509", "-req", "-in", str(csr), "-CA", str(self.ca_cert),
            "-CAkey", str(self.ca_key), "-CAcreateserial", "-days", "2",
            "-extfile", str(ext_file), "-out", str(crt),
        )  # fmt: skip
