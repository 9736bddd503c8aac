#!/usr/bin/env bash
# Builds the Kubernetes programs the kind cluster needs from Go modules (module proxy only, no other download),
# each component cached by version under ~/.cache/eventdb-k8s/go/<component>-<version>/bin
# (override the root with EVENTDB_K8S_CACHE). A complete cache (marker .complete) is reused as is.
#
#   build.sh [COMPONENT...]      build the components (default: all); prints "<component> <bin dir>" lines
#   build.sh --dir COMPONENT     print the bin directory of a component (no build)
#
# Components (versions in versions.env):
#   kubernetes   kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubelet kubeadm kubectl
#   etcd helm kind containerd crictl coredns
#   cni          the CNI plugins the node's pod network uses (ptp, host-local, loopback, portmap)
#   csi          csi-provisioner, csi-snapshotter, snapshot-controller (+ the VolumeSnapshot CRDs)
#   tools        our own programs from test/k8s/go (pause, the CSI hostpath driver), cached by source hash
#   prometheus   prometheus and promtool (the chart's alert rules are checked and unit-tested with promtool)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"

cache_root="${EVENTDB_K8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/eventdb-k8s}"
par="${K8S_BUILD_PARALLELISM:-2}"
export GOFLAGS="-trimpath -buildvcs=false -mod=mod"
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
export CGO_ENABLED=0
log() { echo "[k8s-build $(date -u +%H:%M:%S)] $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

tools_hash() { (cd "$here/go" && find . -type f \( -name '*.go' ! -name '*_test.go' -o -name 'go.mod' -o -name 'go.sum' \) -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-12); }

version_of() {
  case "$1" in
    kubernetes) echo "$K8S_VERSION" ;;
    etcd) echo "$ETCD_VERSION" ;;
    helm) echo "$HELM_VERSION" ;;
    kind) echo "$KIND_VERSION" ;;
    containerd) echo "$CONTAINERD_VERSION" ;;
    crictl) echo "$CRICTL_VERSION" ;;
    coredns) echo "$COREDNS_VERSION" ;;
    cni) echo "$CNI_PLUGINS_VERSION" ;;
    csi) echo "provisioner-${CSI_PROVISIONER_VERSION}_snapshotter-${CSI_SNAPSHOTTER_VERSION}" ;;
    tools) echo "src-$(tools_hash)" ;;
    prometheus) echo "$PROMETHEUS_VERSION" ;;
    *) die "unknown component $1" ;;
  esac
}
dir_of() { echo "$cache_root/go/$1-$(version_of "$1")"; }

# mod_dir MODULE@VERSION: downloads a module (proxy) and prints its directory in the module cache.
mod_dir() {
  local j d
  j="$(GOFLAGS= go mod download -json "$1")"
  d="$(echo "$j" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' | head -1)"
  [[ -n "$d" && -d "$d" ]] || die "could not download $1"
  echo "$d"
}

# wrapper_gomod DIR MODULE VERSION [LOCAL_MODULE=VERSION...]: writes DIR/go.mod for a build module that requires
# MODULE@VERSION with the module's own requirements and replaces. A replace by a relative path (a module inside the
# repository, which the published zip does not contain) becomes a requirement of that module's published version,
# given as LOCAL_MODULE=VERSION, or "auto:VERSION" for every one (unpublished ones are left out).
wrapper_gomod() {
  local out="$1" mod="$2" ver="$3"; shift 3
  local auto="" src gomod line m v
  declare -A localver=()
  for a in "$@"; do
    if [[ "$a" == auto:* ]]; then auto="${a#auto:}"; else localver["${a%%=*}"]="${a#*=}"; fi
  done
  src="$(mod_dir "$mod@$ver")"
  gomod="$src/go.mod"
  mkdir -p "$out"
  {
    echo "module eventdb.local/build-$(basename "$out")"
    echo
    grep -E '^go [0-9.]+$' "$gomod" | head -1
    echo
    echo "require $mod $ver"
    echo
    # requirements (single lines and blocks)
    awk '/^require \(/{inb=1; next} inb && /^\)/{inb=0; next} inb{print "require " $1 " " $2; next} /^require [^(]/{print "require " $2 " " $3}' "$gomod" \
      | grep -v '^require  *$' || true
    # replaces (single lines and blocks), normalised to "replace A [V] => B [V]"
    awk '/^replace \(/{inb=1; next} inb && /^\)/{inb=0; next} inb{print "replace " $0; next} /^replace [^(]/{print}' "$gomod" \
      | sed -E 's/^replace[[:space:]]+/replace /' | while read -r line; do
        if [[ "$line" =~ =\>[[:space:]]*\.\.?/ ]]; then
          m="$(echo "$line" | awk '{print $2}')"
          v="${localver[$m]:-$auto}"
          [[ -n "$v" ]] || die "$mod: no published version given for $m (replaced by a local path)"
          if GOFLAGS= go list -m -json "$m@$v" >/dev/null 2>&1; then echo "replace $m => $m $v"; fi
        else
          echo "$line"
        fi
      done
  } > "$out/go.mod"
}

# align_k8s GOMOD: Kubernetes staging modules (k8s.io/api, client-go, ...) at v0.<minor>.* become the cluster's own
# patch release, the one the kubernetes component compiles: the Go build cache then serves their packages to every
# other component instead of compiling another copy (the largest part of a cold build).
align_k8s() {
  local staging_ver="v0.${K8S_VERSION#v1.}" minor
  minor="${staging_ver%.*}"
  sed -i -E "s#(k8s\.io/[a-z0-9-]+) ${minor//./\\.}\.[0-9]+([^0-9]|\$)#\1 ${staging_ver}\2#g" "$1"
}

# finish NAME OUT_TMP: moves the built binaries in place and marks the cache complete.
finish() {
  local d; d="$(dir_of "$1")"
  rm -rf "$d/bin"; mv "$2" "$d/bin"; touch "$d/bin/.complete"
}

build_kubernetes() {
  local d="$1" out="$2" src staging_ver kcommit minor kldflags
  staging_ver="v0.${K8S_VERSION#v1.}"
  wrapper_gomod "$d/src" k8s.io/kubernetes "$K8S_VERSION" "auto:$staging_ver"
  cat > "$d/src/tools.go" <<'GO'
//go:build tools

package tools
GO
  kcommit="$(GOFLAGS= go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^[[:space:]]*"Hash": "\([0-9a-f]\{40\}\)",\{0,1\}$/\1/p' | head -1)"
  minor="${K8S_VERSION#v1.}"; minor="${minor%%.*}"
  kldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    kldflags+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    kldflags+=" -X $pkg.gitCommit=${kcommit:-unknown} -X $pkg.gitTreeState=clean -X $pkg.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  done
  (cd "$d/src" && go build -p "$par" -ldflags "$kldflags" -o "$out/" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kube-proxy k8s.io/kubernetes/cmd/kubelet \
    k8s.io/kubernetes/cmd/kubeadm k8s.io/kubernetes/cmd/kubectl)
}

build_etcd() {
  local d="$1" out="$2"
  mkdir -p "$d/src"
  cat > "$d/src/go.mod" <<GOMOD
module eventdb.local/etcd-build

go 1.26.0

require (
	go.etcd.io/etcd/server/v3 $ETCD_VERSION
	go.etcd.io/etcd/api/v3 $ETCD_VERSION
	go.etcd.io/etcd/client/pkg/v3 $ETCD_VERSION
	go.etcd.io/etcd/client/v3 $ETCD_VERSION
	go.etcd.io/etcd/pkg/v3 $ETCD_VERSION
)
GOMOD
  (cd "$d/src" && go build -p "$par" -ldflags "-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=$ETCD_VERSION" \
    -o "$out/etcd" go.etcd.io/etcd/server/v3)
}

build_helm() {
  local d="$1" out="$2" hmod minor hldflags
  minor="${K8S_VERSION#v1.}"; minor="${minor%%.*}"
  hmod="helm.sh/helm/${HELM_VERSION%%.*}"
  hldflags="-s -w -X $hmod/internal/version.version=$HELM_VERSION -X $hmod/internal/version.gitTreeState=clean"
  hldflags+=" -X $hmod/pkg/lint/rules.k8sVersionMajor=1 -X $hmod/pkg/lint/rules.k8sVersionMinor=$minor"
  hldflags+=" -X $hmod/pkg/chartutil.k8sVersionMajor=1 -X $hmod/pkg/chartutil.k8sVersionMinor=$minor"
  (cd "$d" && GOFLAGS="-trimpath -buildvcs=false" GOBIN="$out" go install -p "$par" -ldflags "$hldflags" "$hmod/cmd/helm@$HELM_VERSION")
}

build_kind() {
  local d="$1" out="$2"
  (cd "$d" && GOFLAGS="-trimpath -buildvcs=false" GOBIN="$out" go install -p "$par" -ldflags "-s -w" "sigs.k8s.io/kind@$KIND_VERSION")
  # kind's node-image base files (entrypoint, containerd and kubelet units, ...) for the offline node image
  cp -a "$(mod_dir "sigs.k8s.io/kind@$KIND_VERSION")/images/base/files" "$out/kind-base-files"
  chmod -R u+w "$out/kind-base-files"
}

build_containerd() {
  local d="$1" out="$2" m=github.com/containerd/containerd/v2
  (cd "$d" && GOFLAGS="-trimpath -buildvcs=false" GOBIN="$out" go install -p "$par" \
    -ldflags "-s -w -X $m/version.Version=$CONTAINERD_VERSION -X $m/version.Revision=$CONTAINERD_VERSION" \
    "$m/cmd/containerd@$CONTAINERD_VERSION" "$m/cmd/containerd-shim-runc-v2@$CONTAINERD_VERSION" "$m/cmd/ctr@$CONTAINERD_VERSION")
}

build_crictl() {
  local d="$1" out="$2"
  (cd "$d" && GOFLAGS="-trimpath -buildvcs=false" GOBIN="$out" go install -p "$par" \
    -ldflags "-s -w -X sigs.k8s.io/cri-tools/pkg/version.Version=$CRICTL_VERSION" "sigs.k8s.io/cri-tools/cmd/crictl@$CRICTL_VERSION")
}

build_coredns() {
  local d="$1" out="$2" m=github.com/coredns/coredns
  wrapper_gomod "$d/src" "$m" "$COREDNS_VERSION"
  (cd "$d/src" && go build -p "$par" -ldflags "-s -w -X $m/coremain.GitCommit=$COREDNS_VERSION" -o "$out/coredns" "$m")
}

build_cni() {
  local d="$1" out="$2" m=github.com/containernetworking/plugins
  (cd "$d" && GOFLAGS="-trimpath -buildvcs=false" GOBIN="$out" go install -p "$par" -ldflags "-s -w" \
    "$m/plugins/main/ptp@$CNI_PLUGINS_VERSION" "$m/plugins/ipam/host-local@$CNI_PLUGINS_VERSION" \
    "$m/plugins/main/loopback@$CNI_PLUGINS_VERSION" "$m/plugins/meta/portmap@$CNI_PLUGINS_VERSION")
}

build_csi() {
  local d="$1" out="$2" sm=github.com/kubernetes-csi/external-snapshotter/v8 pm=github.com/kubernetes-csi/external-provisioner/v6
  wrapper_gomod "$d/provisioner" "$pm" "$CSI_PROVISIONER_VERSION"
  align_k8s "$d/provisioner/go.mod"
  (cd "$d/provisioner" && go build -p "$par" -ldflags "-s -w -X main.version=$CSI_PROVISIONER_VERSION" -o "$out/" "$pm/cmd/csi-provisioner")
  wrapper_gomod "$d/snapshotter" "$sm" "$CSI_SNAPSHOTTER_VERSION" \
    "github.com/kubernetes-csi/external-snapshotter/client/v8=$CSI_SNAPSHOTTER_VERSION"
  align_k8s "$d/snapshotter/go.mod"
  (cd "$d/snapshotter" && go build -p "$par" -ldflags "-s -w -X main.version=$CSI_SNAPSHOTTER_VERSION" -o "$out/" \
    "$sm/cmd/csi-snapshotter" "$sm/cmd/snapshot-controller")
  # the VolumeSnapshot CRDs ship in the client module
  mkdir -p "$out/crds"
  cp "$(mod_dir "github.com/kubernetes-csi/external-snapshotter/client/v8@$CSI_SNAPSHOTTER_VERSION")"/config/crd/snapshot.storage.k8s.io_*.yaml "$out/crds/"
  chmod u+w "$out"/crds/*
}

build_tools() {
  local d="$1" out="$2"
  (cd "$here/go" && go build -p "$par" -ldflags "-s -w -X main.version=$(version_of tools)" -o "$out/" ./cmd/...)
}

build_prometheus() {
  local d="$1" out="$2" m=github.com/prometheus/prometheus
  # the Go module v0.3XX.Y is the release v3.XX.Y; the web UI's assets are not in the module (the API is)
  (cd "$d" && GOFLAGS="-trimpath -buildvcs=false" GOBIN="$out" go install -p "$par" \
    -ldflags "-s -w -X github.com/prometheus/common/version.Version=$PROMETHEUS_VERSION" \
    "$m/cmd/promtool@$PROMETHEUS_VERSION" "$m/cmd/prometheus@$PROMETHEUS_VERSION")
}

build_one() {
  local name="$1" d out t0
  d="$(dir_of "$name")"
  [[ -f "$d/bin/.complete" ]] && return 0
  mkdir -p "$d"
  exec 9>"$d/.build.lock"
  flock -w 7200 9 || die "could not take $d/.build.lock"
  if [[ ! -f "$d/bin/.complete" ]]; then
    command -v go >/dev/null || die "go is not installed (Debian: the Go toolchain >= 1.26, see README)"
    out="$d/bin.tmp"; rm -rf "$out"; mkdir -p "$out"
    t0=$(date +%s)
    log "building $name $(version_of "$name") (cold; cached afterwards in $d)"
    "build_$name" "$d" "$out"
    finish "$name" "$out"
    log "$name built in $(( $(date +%s) - t0 ))s"
    echo "$name $(( $(date +%s) - t0 ))" >> "$cache_root/build-times.txt"
  fi
  exec 9>&-
}

all=(kubernetes etcd helm kind containerd crictl coredns cni csi tools prometheus)
if [[ "${1:-}" == --dir ]]; then echo "$(dir_of "$2")/bin"; exit 0; fi
comps=("$@"); ((${#comps[@]})) || comps=("${all[@]}")
for c in "${comps[@]}"; do build_one "$c"; echo "$c $(dir_of "$c")/bin"; done
