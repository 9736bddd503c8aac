#!/usr/bin/env bash
# Builds the local control plane binaries from Go modules (module proxy only, no other downloads):
#   etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, helm
# into ~/.cache/eventdb-k8s/<versions>/bin (override the root with EVENTDB_K8S_CACHE).
# Idempotent: a complete cache (marker file .complete) is reused as is. Prints the bin directory last.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"

cache_root="${EVENTDB_K8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/eventdb-k8s}"
key="k8s-${K8S_VERSION}_etcd-${ETCD_VERSION}_helm-${HELM_VERSION}"
dir="$cache_root/$key"
bin="$dir/bin"
mkdir -p "$dir"

if [[ -f "$bin/.complete" ]]; then
  echo "$bin"
  exit 0
fi

exec 9>"$dir/.build.lock"
if ! flock -w 7200 9; then echo "build.sh: could not take $dir/.build.lock" >&2; exit 1; fi
if [[ -f "$bin/.complete" ]]; then echo "$bin"; exit 0; fi

command -v go >/dev/null || { echo "build.sh: go is not installed" >&2; exit 1; }
export GOFLAGS="-trimpath -buildvcs=false -mod=mod"
export GOTOOLCHAIN="${GOTOOLCHAIN:-auto}"
export CGO_ENABLED=0
par="${K8S_BUILD_PARALLELISM:-2}"
out="$dir/bin.tmp"
rm -rf "$out"; mkdir -p "$out"
log() { echo "[k8s-build $(date -u +%H:%M:%S)] $*" >&2; }
start_all=$(date +%s)
build_date="$(date -u +%Y-%m-%dT%H:%M:%SZ)"

# ---- Kubernetes (kube-apiserver, kube-controller-manager, kube-scheduler, kubectl) ----
# k8s.io/kubernetes points its staging modules at ./staging via replace directives, which the published
# module zip does not contain. A small build module requires k8s.io/kubernetes and replaces every staging
# module with its published v0.X.Y version.
k8s_mod="$dir/src/kubernetes"
mkdir -p "$k8s_mod"
staging_ver="v0.${K8S_VERSION#v1.}"
log "resolving k8s.io/kubernetes@$K8S_VERSION"
kjson="$(cd "$k8s_mod" && GOFLAGS= go mod download -json "k8s.io/kubernetes@$K8S_VERSION")"
kgomod="$(echo "$kjson" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p' | head -1)"
kcommit="$(echo "$kjson" | sed -n 's/^[[:space:]]*"Hash": "\([0-9a-f]\{40\}\)",\{0,1\}$/\1/p' | head -1)"
[[ -n "$kgomod" && -f "$kgomod" ]] || { echo "build.sh: no go.mod for k8s.io/kubernetes@$K8S_VERSION" >&2; exit 1; }
{
  echo "module eventdb.local/k8s-build"
  echo
  echo "go 1.26.0"
  echo
  echo "require k8s.io/kubernetes $K8S_VERSION"
  echo
  echo "replace ("
  grep -E '^[[:space:]]*k8s\.io/[a-z0-9-]+ => \./staging/' "$kgomod" | awk -v v="$staging_ver" '{print "\t" $1 " => " $1 " " v}' \
    | while read -r line; do
        m="$(echo "$line" | awk '{print $1}')"
        # a few sample modules are not published; a replace for them is not needed either
        if GOFLAGS= go list -m -json "$m@$staging_ver" >/dev/null 2>&1; then echo "	$line"; fi
      done
  echo ")"
} > "$k8s_mod/go.mod"
cat > "$k8s_mod/tools.go" <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
GO
minor="${K8S_VERSION#v1.}"; minor="${minor%%.*}"
kldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  kldflags+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  kldflags+=" -X $pkg.gitCommit=$kcommit -X $pkg.gitTreeState=clean -X $pkg.buildDate=$build_date"
done
t0=$(date +%s)
log "building kube-apiserver kube-controller-manager kube-scheduler kubectl $K8S_VERSION (-p $par)"
(cd "$k8s_mod" && go build -p "$par" -ldflags "$kldflags" -o "$out/" \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl)
log "kubernetes built in $(( $(date +%s) - t0 ))s"
echo "kubernetes $(( $(date +%s) - t0 ))" >> "$dir/build-times.txt"

# ---- etcd ----
etcd_mod="$dir/src/etcd"
mkdir -p "$etcd_mod"
cat > "$etcd_mod/go.mod" <<GOMOD
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
cat > "$etcd_mod/tools.go" <<'GO'
//go:build tools

package tools

import _ "go.etcd.io/etcd/server/v3"
GO
t0=$(date +%s)
log "building etcd $ETCD_VERSION"
(cd "$etcd_mod" && go build -p "$par" -ldflags "-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=$ETCD_VERSION" \
  -o "$out/etcd" go.etcd.io/etcd/server/v3)
log "etcd built in $(( $(date +%s) - t0 ))s"
echo "etcd $(( $(date +%s) - t0 ))" >> "$dir/build-times.txt"

# ---- helm ----
t0=$(date +%s)
log "building helm $HELM_VERSION"
hmod="helm.sh/helm/${HELM_VERSION%%.*}"
hldflags="-s -w -X $hmod/internal/version.version=$HELM_VERSION -X $hmod/internal/version.gitTreeState=clean"
hldflags+=" -X $hmod/pkg/lint/rules.k8sVersionMajor=1 -X $hmod/pkg/lint/rules.k8sVersionMinor=$minor"
hldflags+=" -X $hmod/pkg/chartutil.k8sVersionMajor=1 -X $hmod/pkg/chartutil.k8sVersionMinor=$minor"
(cd "$dir" && GOFLAGS="-trimpath -buildvcs=false" GOBIN="$out" go install -p "$par" -ldflags "$hldflags" "$hmod/cmd/helm@$HELM_VERSION")
log "helm built in $(( $(date +%s) - t0 ))s"
echo "helm $(( $(date +%s) - t0 ))" >> "$dir/build-times.txt"

total=$(( $(date +%s) - start_all ))
echo "total $total" >> "$dir/build-times.txt"
log "all binaries built in ${total}s"
"$out/kubectl" version --client >&2 || true
rm -rf "$bin"
mv "$out" "$bin"
touch "$bin/.complete"
echo "$bin"
