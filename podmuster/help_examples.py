"""The "examples:" section at the end of every command's ``--help``.

Why: a user reading ``podmuster run scheduler --help`` wants a command line to start
from, not only a list of flags. The examples of every command of ``podmuster`` and
``kubectl podmuster`` are kept here, one table per program, and attached to the
parsers after they are built (:func:`attach`); the tests parse every example line
with the real parser, so an example cannot name a flag or a choice that does not
exist.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from podmuster.parser_tree import walk

HEADING = "examples:"


class Example(NamedTuple):
    """One example: what it does (a ``#`` comment above it) and the command line."""

    what: str
    line: str


Examples = Mapping[tuple[str, ...], Sequence[Example]]

PODMUSTER: Examples = {
    (): (
        Example(
            "see the whole system on a simulated cluster, no Kubernetes needed", "podmuster demo"
        ),
        Example(
            "what the scheduler would do with a cluster dump, and why its jobs wait",
            "podmuster schedule cluster.yaml --explain",
        ),
        Example("run every component against the current kubeconfig context", "podmuster run all"),
        Example(
            "complete commands and flags with Tab in bash", "source <(podmuster completion bash)"
        ),
    ),
    ("schedule",): (
        Example(
            "why pods wait: one cycle on the cluster as it is now, with reasons",
            "kubectl get nodes,pods,podgroups.scheduling.run.ai,queues.scheduling.run.ai,"
            "priorityclasses -A -o yaml | podmuster schedule - --explain",
        ),
        Example("the same on a saved dump", "podmuster schedule cluster.yaml --explain"),
        Example(
            "only allocate, with the scheduler's configuration, as JSON",
            "podmuster schedule cluster.yaml --actions allocate "
            "--config scheduler-config.yaml -o json",
        ),
        Example(
            "three cycles, each one's binds and evictions carried out before the next",
            "podmuster schedule nodes.yaml pods.yaml queues.yaml --rounds 3",
        ),
        Example(
            "one node pool's scheduler, at a given time, with measured queue usage",
            "podmuster schedule cluster.yaml --node-pool a100 --now 2026-01-05T09:00:00Z "
            "--usage usage.yaml",
        ),
    ),
    ("group",): (
        Example(
            "the PodGroups the podgrouper would create for a PyTorchJob",
            "podmuster group pytorchjob.yaml",
        ),
        Example(
            "which pod goes to which PodGroup and subgroup, as JSON",
            "podmuster group raycluster.yaml --pods -o json",
        ),
        Example(
            "workloads without a queue label go to team-a",
            "podmuster group jobset.yaml workflow.yaml --default-queue team-a",
        ),
    ),
    ("demo",): (
        Example("the timeline and summary, in colour on a terminal", "podmuster demo"),
        Example("the same as JSON, for scripts", "podmuster demo -o json"),
        Example("plain text in a pager", "podmuster demo --no-color | less"),
    ),
    ("simulate",): (
        Example(
            "replay the Alibaba GPU 2023 trace and write a report with plots",
            "podmuster simulate --trace alibaba-2023/ --report report.html",
        ),
        Example(
            "the project's CSV trace on a described cluster, 100 times denser",
            "podmuster simulate --trace jobs.csv --cluster cluster.yaml --arrival-scale 0.01",
        ),
        Example(
            "workload manifests, two configurations side by side",
            "podmuster simulate --cluster cluster.yaml --workloads manifests/ "
            "--config today.yaml --compare spread.yaml --label A=today --label B=spread",
        ),
        Example(
            "a grid of configurations and quotas, in this process, as JSON",
            "podmuster simulate --sweep sweep.yaml --sweep-local -o json",
        ),
    ),
    ("run",): (
        Example(
            "the podgrouper, scheduler, binder and controllers in one process", "podmuster run all"
        ),
        Example(
            "only the scheduler, against another cluster",
            "podmuster run scheduler --context staging",
        ),
    ),
    ("run", "podgrouper"): (
        Example(
            "one active replica, metrics on 8080",
            "podmuster run podgrouper --leader-elect --metrics-port 8080",
        ),
        Example(
            "only two namespaces, queues named by another label",
            "podmuster run podgrouper --namespace team-a --namespace team-b "
            "--queue-label-key example.com/queue",
        ),
    ),
    ("run", "scheduler"): (
        Example(
            "with a configuration file, one active replica",
            "podmuster run scheduler --config scheduler-config.yaml --leader-elect",
        ),
        Example(
            "one node pool, time-based fair share from Prometheus",
            "podmuster run scheduler --node-pool a100 "
            "--usage-prometheus-url http://prometheus.monitoring:9090",
        ),
    ),
    ("run", "binder"): (
        Example(
            "eight BindRequests at once, one active replica",
            "podmuster run binder --leader-elect --workers 8",
        ),
        Example(
            "GPU sharing with CDI device names, reservation pods in the nvidia runtime class",
            "podmuster run binder --cdi-enabled --resource-reservation-runtime-class nvidia",
        ),
    ),
    ("run", "controllers"): (
        Example(
            "status controllers, patching at most every half second",
            "podmuster run controllers --leader-elect --debounce 0.5",
        ),
    ),
    ("run", "all"): (
        Example(
            "everything in one process, debug logs as JSON",
            "podmuster run all --kubeconfig ~/.kube/config --log-level debug --log-format json",
        ),
        Example(
            "with the node-scale-adjuster for cluster-autoscaler or Karpenter",
            "podmuster run all --cluster-autoscaling --scaling-pod-namespace kai-scale-adjust",
        ),
    ),
    ("run", "webhooks"): (
        Example(
            "serve the admission webhooks with a mounted certificate",
            "podmuster run webhooks --port 9443 --tls-cert-file /certs/tls.crt "
            "--tls-key-file /certs/tls.key",
        ),
    ),
    ("run", "node-scale-adjuster"): (
        Example(
            "scaling pods from another image, two minutes apart at most",
            "podmuster run node-scale-adjuster --scaling-pod-image busybox:1.36 "
            "--scale-cool-down-seconds 120",
        ),
    ),
    ("run", "dashboard"): (
        Example(
            "the web page on http://localhost:8090/",
            "podmuster run dashboard --kubeconfig ~/.kube/config --port 8090",
        ),
        Example(
            "what one node pool's scheduler sees, refreshed every 5 s",
            "podmuster run dashboard --node-pool a100 --refresh 5",
        ),
    ),
    ("completion",): (
        Example("bash, for this shell", "source <(podmuster completion bash)"),
        Example(
            "bash, for every new shell",
            "podmuster completion bash > ~/.local/share/bash-completion/completions/podmuster",
        ),
        Example(
            "zsh, with fpath=(~/.zfunc $fpath) before compinit in ~/.zshrc",
            "podmuster completion zsh > ~/.zfunc/_podmuster",
        ),
        Example("fish", "podmuster completion fish > ~/.config/fish/completions/podmuster.fish"),
    ),
}

KUBECTL_PODMUSTER: Examples = {
    (): (
        Example(
            "why a pod waits, in the scheduler's words",
            "kubectl podmuster explain pod/train-0 -n team-a",
        ),
        Example("the queue tree with shares", "kubectl podmuster queues"),
        Example("allocation by queue", "kubectl podmuster top"),
    ),
    ("explain",): (
        Example("a pod: its PodGroup's reasons", "kubectl podmuster explain pod/train-0 -n team-a"),
        Example(
            "a PodGroup, as JSON", "kubectl podmuster explain podgroup/train -n team-a -o json"
        ),
    ),
    ("queues",): (
        Example(
            "the queue tree, deserved / fair share / allocated / limit", "kubectl podmuster queues"
        ),
        Example(
            "what one node pool's scheduler sees, in another cluster",
            "kubectl podmuster queues --context staging --node-pool a100",
        ),
    ),
    ("top",): (
        Example("allocation by queue", "kubectl podmuster top"),
        Example(
            "as JSON, waiting up to two minutes for the listing",
            "kubectl podmuster top -o json --timeout 120",
        ),
    ),
}


def epilog(examples: Sequence[Example]) -> str:
    """The examples section as ``--help`` prints it, lines kept as written."""
    lines = [HEADING]
    for example in examples:
        if example.what:
            lines.append(f"  # {example.what}")
        lines.append(f"  {example.line}")
    return "\n".join(lines)


class _KeepsExamples(argparse.HelpFormatter):
    """Fills text as argparse does, except the examples, whose lines are commands."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if text.startswith(HEADING):
            return text
        return super()._fill_text(text, width, indent)


def attach(parser: argparse.ArgumentParser, examples: Examples) -> None:
    """Give every command of ``parser`` that ``examples`` has its examples section."""
    for path, command in walk(parser):
        if path in examples:
            command.epilog = epilog(examples[path])
            command.formatter_class = _keeping_examples(command.formatter_class)


def _keeping_examples(formatter: Any) -> Any:
    """``formatter`` (a HelpFormatter class), keeping the examples' lines as written."""
    if not isinstance(formatter, type) or issubclass(formatter, _KeepsExamples):
        return formatter
    if formatter is argparse.HelpFormatter:
        return _KeepsExamples
    return type(f"{formatter.__name__}WithExamples", (_KeepsExamples, formatter), {})
