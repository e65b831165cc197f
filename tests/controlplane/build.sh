#!/usr/bin/env bash
# Build the test control plane (etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, kubectl, kwok, and the framework operators) and helm (for the
# chart tests) from Go modules.
#
# Why: this project has no Docker and no kind; the Go module proxy serves
# Kubernetes' own sources, so the real binaries are compiled once per machine
# into a cache outside the repository, keyed by version. Only the Go modules'
# go.mod/go.sum and this script are committed, never a binary.
#
#   bash tests/controlplane/build.sh            # build what is missing, print the bin dir
#   PODMUSTER_CP_OPTIONAL=none bash ...          # core only (no kwok, no operators)
#   PODMUSTER_CP_OPTIONAL="kwok helm" bash ...   # core, kwok and helm (make chart-test)
#   PODMUSTER_CACHE_DIR=/somewhere bash ...      # another cache root
#
# Core binaries (etcd, kube-apiserver, kube-controller-manager, kubectl) must
# build or the script fails. Optional ones (kube-scheduler, kwok, kuberay,
# training-operator by default; helm only when named) that fail are recorded in
# <cache>/failed/<name>.log and the tests that need them skip with that reason.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"

export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
export CGO_ENABLED=0
export GOFLAGS="${GOFLAGS:-} -mod=readonly"

# Path.home() in the tests falls back to the passwd entry the same way; go needs HOME.
export HOME="${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}"
cache_root="${PODMUSTER_CACHE_DIR:-$HOME/.cache/podmuster}"
cache="$cache_root/controlplane/v${K8S_VERSION}-v${ETCD_VERSION}"
bin="$cache/bin"
share="$cache/share"
failed="$cache/failed"
mkdir -p "$bin" "$share" "$failed"

optional="${PODMUSTER_CP_OPTIONAL:-kube-scheduler kwok kuberay training-operator}"
[[ "$optional" == "none" ]] && optional=""

k8s_ldflags="-s -w -X k8s.io/component-base/version.gitVersion=v${K8S_VERSION}
 -X k8s.io/component-base/version.gitMajor=${K8S_VERSION%%.*}
 -X k8s.io/component-base/version.gitMinor=$(cut -d. -f2 <<<"$K8S_VERSION")
 -X k8s.io/component-base/version.gitTreeState=clean"

log() { printf '[controlplane %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

fmt_secs() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

# build NAME MODULE_DIR PACKAGE [LDFLAGS]: go build PACKAGE into $bin/NAME,
# printing a progress line every 100 compiled packages.
build() {
	local name="$1" dir="$here/go/$2" pkg="$3" ldflags="${4:--s -w}"
	if [[ -x "$bin/$name" ]]; then
		log "$name: cached ($bin/$name)"
		return 0
	fi
	local start total
	start=$(date +%s)
	log "$name: resolving $pkg"
	total=$(cd "$dir" && go list -deps "$pkg" | wc -l)
	log "$name: compiling up to $total packages (parallelism ${GO_BUILD_P:-2})"
	local tmp="$bin/.$name.tmp.$$"
	local buildlog="$failed/.$name.building"
	# go build -v names each package it compiles (cached ones are not named).
	if (cd "$dir" && go build -p "${GO_BUILD_P:-2}" -v -trimpath -ldflags "$ldflags" -o "$tmp" "$pkg") \
		2>&1 | tee "$buildlog" | awk -v n="$name" -v t="$total" \
			'{c++} c%100==0 {printf "[controlplane] %s: %d/%d packages compiled\n", n, c, t > "/dev/stderr"}' \
		&& [[ -x "$tmp" ]]; then
		mv "$tmp" "$bin/$name"
		rm -f "$buildlog" "$failed/$name.log"
		log "$name: built in $(fmt_secs $(($(date +%s) - start))) ($(du -h "$bin/$name" | cut -f1))"
	else
		rm -f "$tmp"
		mv "$buildlog" "$failed/$name.log"
		log "$name: BUILD FAILED after $(fmt_secs $(($(date +%s) - start))); see $failed/$name.log"
		tail -n 20 "$failed/$name.log" >&2
		return 1
	fi
}

# moddir MODULE_DIR MODULE: where the module's source sits in the module cache.
moddir() { (cd "$here/go/$1" && go list -m -f '{{.Dir}}' "$2"); }

wanted() { [[ " $optional " == *" $1 "* ]]; }

t0=$(date +%s)
log "cache: $cache"
log "go: $(go version)"

build etcd etcd go.etcd.io/etcd/server/v3
build kube-apiserver k8s k8s.io/kubernetes/cmd/kube-apiserver "$k8s_ldflags"
build kube-controller-manager k8s k8s.io/kubernetes/cmd/kube-controller-manager "$k8s_ldflags"
build kubectl k8s k8s.io/kubernetes/cmd/kubectl "$k8s_ldflags"

if wanted kube-scheduler; then
	build kube-scheduler k8s k8s.io/kubernetes/cmd/kube-scheduler "$k8s_ldflags" || true
fi
if wanted kwok; then
	if build kwok kwok sigs.k8s.io/kwok/cmd/kwok && [[ ! -e "$share/kwok-stages/pod-ready.yaml" ]]; then
		# kwok needs Stage documents out of cluster; take them from its module.
		src="$(moddir kwok sigs.k8s.io/kwok)/kustomize/stage"
		mkdir -p "$share/kwok-stages"
		cp -f "$src/node/fast/node-initialize.yaml" "$src/node/heartbeat/node-heartbeat.yaml" \
			"$src/pod/fast/pod-ready.yaml" "$src/pod/fast/pod-delete.yaml" "$share/kwok-stages/"
		chmod -R u+w "$share/kwok-stages"
	fi
fi
if wanted kuberay; then
	if build kuberay kuberay github.com/ray-project/kuberay/ray-operator && [[ ! -d "$share/crds/kuberay" ]]; then
		mkdir -p "$share/crds/kuberay"
		cp -f "$(moddir kuberay github.com/ray-project/kuberay/ray-operator)"/config/crd/bases/*.yaml \
			"$share/crds/kuberay/"
		chmod -R u+w "$share/crds/kuberay"
	fi
fi
if wanted training-operator; then
	if build training-operator training github.com/kubeflow/training-operator/cmd/training-operator.v1 \
		&& [[ ! -d "$share/crds/training-operator" ]]; then
		mkdir -p "$share/crds/training-operator"
		cp -f "$(moddir training github.com/kubeflow/training-operator)"/manifests/base/crds/kubeflow.org_*.yaml \
			"$share/crds/training-operator/"
		chmod -R u+w "$share/crds/training-operator"
	fi
fi

if wanted helm; then
	build helm helm helm.sh/helm/v4/cmd/helm "-s -w -X helm.sh/helm/v4/internal/version.version=v${HELM_VERSION}
 -X helm.sh/helm/v4/internal/version.gitTreeState=clean" || true
fi

log "done in $(fmt_secs $(($(date +%s) - t0))); binaries in $bin"
ls -1 "$bin" >&2
echo "$bin"
