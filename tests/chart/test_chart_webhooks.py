"""The admission webhooks in the chart: configuration, TLS either way, failure policies."""

from __future__ import annotations

import base64
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from chartkit import NAMESPACE, Helm, Rendered, container

from webhooks.server import PATHS

pytestmark = pytest.mark.chart

NAME = "podmuster-webhooks"


def webhooks_of(rendered: Rendered) -> dict[str, dict[str, Any]]:
    config = rendered.get("ValidatingWebhookConfiguration", NAME)
    return {w["name"]: w for w in config["webhooks"]}


def openssl(*args: str) -> str:
    exe = shutil.which("openssl")
    if exe is None:
        pytest.skip("the openssl command is needed")
    return subprocess.run([exe, *args], check=True, capture_output=True, text=True).stdout


def test_rules_paths_and_failure_policies(helm: Helm) -> None:
    hooks = webhooks_of(helm.template())
    assert sorted(hooks) == [
        "podgroups.validation.podmuster.io",
        "pods.validation.podmuster.io",
        "queues.validation.podmuster.io",
        "topologies.validation.podmuster.io",
    ]
    podgroups, queues = (
        hooks["podgroups.validation.podmuster.io"],
        hooks["queues.validation.podmuster.io"],
    )
    assert podgroups["failurePolicy"] == "Ignore"
    assert queues["failurePolicy"] == "Fail"
    assert podgroups["rules"] == [
        {"apiGroups": ["scheduling.run.ai"], "apiVersions": ["v2alpha2"], "resources": ["podgroups"],
         "operations": ["CREATE", "UPDATE"], "scope": "Namespaced"}
    ]  # fmt: skip
    assert queues["rules"][0]["resources"] == ["queues"]
    assert queues["rules"][0]["scope"] == "Cluster"
    for hook, path in ((podgroups, "/validate-podgroup"), (queues, "/validate-queue")):
        assert hook["sideEffects"] == "None"
        assert hook["admissionReviewVersions"] == ["v1"]
        assert hook["clientConfig"]["service"] == {
            "name": NAME, "namespace": NAMESPACE, "path": path, "port": 443,
        }  # fmt: skip
    topologies = hooks["topologies.validation.podmuster.io"]
    assert topologies["failurePolicy"] == "Fail"
    assert topologies["rules"] == [
        {"apiGroups": ["kai.scheduler"], "apiVersions": ["v1alpha1"], "resources": ["topologies"],
         "operations": ["CREATE", "UPDATE"], "scope": "Cluster"}
    ]  # fmt: skip
    assert topologies["clientConfig"]["service"]["path"] == PATHS["topologies"]
    service = helm.template().get("Service", NAME)
    assert service["spec"]["ports"] == [
        {"name": "webhook", "port": 443, "targetPort": "webhook", "protocol": "TCP"}
    ]
    policies = {"webhooks": {"failurePolicy": {"podGroups": "Fail", "queues": "Ignore"}}}
    hooks = webhooks_of(helm.template(policies))
    assert hooks["podgroups.validation.podmuster.io"]["failurePolicy"] == "Fail"
    assert hooks["queues.validation.podmuster.io"]["failurePolicy"] == "Ignore"


def test_pod_webhook_sees_only_gpu_sharing_pods_of_our_scheduler(helm: Helm) -> None:
    """Pods on CREATE and UPDATE (as KAI); Ignore by default, so an outage never blocks pod
    creation; the API server sends only pods for our scheduler with a GPU-sharing
    annotation, and an UPDATE only when one of those annotations changed."""
    hook = webhooks_of(helm.template())["pods.validation.podmuster.io"]
    assert hook["failurePolicy"] == "Ignore"
    assert hook["sideEffects"] == "None"
    assert hook["admissionReviewVersions"] == ["v1"]
    assert hook["clientConfig"]["service"] == {
        "name": NAME, "namespace": NAMESPACE, "path": "/validate-pod", "port": 443,
    }  # fmt: skip
    assert hook["rules"] == [
        {"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"],
         "operations": ["CREATE", "UPDATE"], "scope": "Namespaced"}
    ]  # fmt: skip
    assert hook["namespaceSelector"] == {
        "matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system"]}
        ]
    }
    assert hook["objectSelector"] == {}
    conditions = {c["name"]: c["expression"] for c in hook["matchConditions"]}
    assert conditions["scheduler-name"] == (
        "has(object.spec.schedulerName) && object.spec.schedulerName == 'kai-scheduler'"
    )
    for annotation in (
        "gpu-fraction", "gpu-memory", "gpu-fraction-num-devices", "gpu-fraction-container-name",
        "mps",
    ):  # fmt: skip
        assert f"'{annotation}'" in conditions["gpu-sharing-annotations"]
        assert f"'{annotation}'" in conditions["gpu-sharing-annotations-changed"]
    assert conditions["gpu-sharing-annotations-changed"].startswith(
        "request.operation != 'UPDATE' || "
    )
    selector = {"matchLabels": {"gpu-sharing": "on"}}
    values = {
        "schedulerName": "batch",
        "webhooks": {
            "failurePolicy": {"pods": "Fail"},
            "pods": {"namespaceSelector": selector, "objectSelector": selector},
        },
    }
    rendered = helm.template(values)
    hook = webhooks_of(rendered)["pods.validation.podmuster.io"]
    assert hook["failurePolicy"] == "Fail"
    assert hook["objectSelector"] == selector
    assert hook["namespaceSelector"] == {
        "matchLabels": {"gpu-sharing": "on"},
        "matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system"]}
        ],
    }
    everywhere = webhooks_of(helm.template({"webhooks": {"pods": {"excludeNamespaces": []}}}))
    assert everywhere["pods.validation.podmuster.io"]["namespaceSelector"] == {}
    assert "object.spec.schedulerName == 'batch'" in hook["matchConditions"][0]["expression"]
    args = container(rendered.get("Deployment", NAME))["args"]
    assert "--scheduler-name=batch" in args
    hooks = webhooks_of(helm.template({"webhooks": {"pods": {"enabled": False}}}))
    assert "pods.validation.podmuster.io" not in hooks
    assert len(hooks) == 3  # podgroups, queues, topologies


def test_self_signed_certificate_matches_the_ca_bundle(helm: Helm, tmp_path: Path) -> None:
    rendered = helm.template()
    secret = rendered.get("Secret", "podmuster-webhooks-tls")
    assert secret["type"] == "kubernetes.io/tls"
    files = {}
    for key in ("tls.crt", "tls.key", "ca.crt"):
        files[key] = tmp_path / key
        files[key].write_bytes(base64.b64decode(secret["data"][key]))
    for hook in webhooks_of(rendered).values():
        assert hook["clientConfig"]["caBundle"] == secret["data"]["ca.crt"]
    assert "OK" in openssl("verify", "-CAfile", str(files["ca.crt"]), str(files["tls.crt"]))
    names = openssl("x509", "-noout", "-ext", "subjectAltName", "-in", str(files["tls.crt"]))
    assert f"DNS:{NAME}.{NAMESPACE}.svc" in names
    assert f"DNS:{NAME}.{NAMESPACE}.svc.cluster.local" in names
    box = container(rendered.get("Deployment", NAME))
    assert {"name": "tls", "mountPath": "/etc/podmuster/tls", "readOnly": True} in box[
        "volumeMounts"
    ]
    volumes = rendered.get("Deployment", NAME)["spec"]["template"]["spec"]["volumes"]
    assert {"name": "tls", "secret": {"secretName": "podmuster-webhooks-tls"}} in volumes
    assert {"name": "webhook", "containerPort": 9443, "protocol": "TCP"} in box["ports"]


def test_cert_manager_mode(helm: Helm) -> None:
    rendered = helm.template({"webhooks": {"tls": {"mode": "certManager"}}})
    assert rendered.names("Secret") == []
    for kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
        config = rendered.get(kind, NAME)
        assert config["metadata"]["annotations"] == {
            "cert-manager.io/inject-ca-from": f"{NAMESPACE}/{NAME}"
        }
        assert all("caBundle" not in w["clientConfig"] for w in config["webhooks"])
    certificate = rendered.get("Certificate", NAME)
    assert certificate["spec"]["secretName"] == "podmuster-webhooks-tls"
    assert certificate["spec"]["issuerRef"] == {"kind": "Issuer", "name": f"{NAME}-selfsigned"}
    assert rendered.get("Issuer", f"{NAME}-selfsigned")["spec"] == {"selfSigned": {}}
    issuer = {"kind": "ClusterIssuer", "name": "corp-ca"}
    rendered = helm.template(
        {"webhooks": {"tls": {"mode": "certManager", "certManagerIssuer": issuer}}}
    )
    assert rendered.names("Issuer") == []
    assert rendered.get("Certificate", NAME)["spec"]["issuerRef"] == issuer


def test_webhooks_can_be_left_out(helm: Helm) -> None:
    rendered = helm.template({"webhooks": {"enabled": False}})
    assert NAME not in rendered.names("Deployment")
    assert rendered.names("ValidatingWebhookConfiguration") == []
    assert rendered.names("MutatingWebhookConfiguration") == []
    assert rendered.names("Secret") == []


def test_pod_mutation_sees_only_fractional_pods_of_our_scheduler(helm: Helm) -> None:
    """The env wiring: CREATE of pods with gpu-fraction or gpu-memory only; Fail by default
    (an unmutated sharing pod would start without its GPU env)."""
    rendered = helm.template()
    config = rendered.get("MutatingWebhookConfiguration", NAME)
    [hook] = config["webhooks"]
    assert hook["name"] == "pods.mutation.podmuster.io"
    assert hook["failurePolicy"] == "Fail"
    assert hook["reinvocationPolicy"] == "Never"
    assert hook["sideEffects"] == "None"
    assert hook["clientConfig"]["service"] == {
        "name": NAME, "namespace": NAMESPACE, "path": "/mutate-pod", "port": 443,
    }  # fmt: skip
    assert hook["clientConfig"]["caBundle"]
    assert hook["rules"] == [
        {"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"],
         "operations": ["CREATE"], "scope": "Namespaced"}
    ]  # fmt: skip
    conditions = {c["name"]: c["expression"] for c in hook["matchConditions"]}
    assert "object.spec.schedulerName == 'kai-scheduler'" in conditions["scheduler-name"]
    assert conditions["gpu-sharing-request"] == (
        "has(object.metadata.annotations) && "
        "['gpu-fraction', 'gpu-memory'].exists(k, k in object.metadata.annotations)"
    )
    ignore = helm.template({"webhooks": {"failurePolicy": {"podMutation": "Ignore"}}})
    assert ignore.get("MutatingWebhookConfiguration", NAME)["webhooks"][0]["failurePolicy"] == (
        "Ignore"
    )
    off = helm.template({"webhooks": {"pods": {"enabled": False}}})
    assert NAME not in off.names("MutatingWebhookConfiguration")


GATE = f"{NAME}-queue-admission"


def test_queue_admission_gate_sees_every_new_pod_of_our_scheduler(helm: Helm) -> None:
    """/gate-pod decides from the Queues, so every CREATE of our scheduler's pods is sent;
    Ignore by default (an outage lets pods in ungated rather than not at all); the same
    namespace and object selectors as the other pod webhooks."""
    rendered = helm.template()
    [hook] = rendered.get("MutatingWebhookConfiguration", GATE)["webhooks"]
    assert hook["name"] == "queue-admission.podmuster.io"
    assert hook["failurePolicy"] == "Ignore"
    assert hook["clientConfig"]["service"]["path"] == "/gate-pod"
    assert hook["clientConfig"]["caBundle"]
    assert hook["rules"][0]["operations"] == ["CREATE"]
    assert hook["rules"][0]["resources"] == ["pods"]
    assert [c["name"] for c in hook["matchConditions"]] == ["scheduler-name"]
    excluded = hook["namespaceSelector"]["matchExpressions"][0]
    assert excluded["values"] == ["kube-system"]
    args = container(rendered.get("Deployment", NAME))["args"]
    assert "--queue-label-key=kai.scheduler/queue" in args
    assert "--admission-gate-all-queues" not in args
    off = helm.template({"queueAdmission": {"enabled": False}})
    assert GATE not in off.names("MutatingWebhookConfiguration")
    fail = helm.template({"queueAdmission": {"failurePolicy": "Fail"}})
    assert fail.get("MutatingWebhookConfiguration", GATE)["webhooks"][0]["failurePolicy"] == "Fail"


def test_all_queues_reaches_the_webhook_and_the_scheduler(helm: Helm) -> None:
    rendered = helm.template({"queueAdmission": {"allQueues": True}})
    args = container(rendered.get("Deployment", NAME))["args"]
    assert "--admission-gate-all-queues" in args
    config = rendered.get("ConfigMap", "podmuster-scheduler-config")["data"]["scheduler.yaml"]
    assert "queueAdmissionGate: true" in config
    plain = helm.template().get("ConfigMap", "podmuster-scheduler-config")["data"]
    assert "queueAdmissionGate" not in plain["scheduler.yaml"]


def test_the_gpu_fraction_runtime_class_reaches_the_webhook(helm: Helm) -> None:
    def flag(values: dict[str, Any]) -> list[str]:
        args = container(helm.template(values).get("Deployment", NAME))["args"]
        return [a for a in args if a.startswith("--gpu-fraction-runtime-class-name")]

    assert flag({}) == ["--gpu-fraction-runtime-class-name=nvidia"]  # KAI's default
    off = {"webhooks": {"pods": {"gpuFractionRuntimeClassName": ""}}}
    assert flag(off) == ["--gpu-fraction-runtime-class-name="]
