#!/usr/bin/env bash
# `make run`: a local Kubernetes cluster (or the one in $KUBECONFIG), this checkout's images, the operator from
# its chart, and a 3-node EventDBCluster; waits until it is Ready and prints how to reach it and how to stop.
#   make run                                   kind cluster of this checkout (made if needed), images loaded into it
#   make run KUBECONFIG=~/.kube/config IMAGE_REGISTRY=registry.example.com/me   your cluster, images pushed there
# Variables: RUN_NAMESPACE (eventdb-demo), OPERATOR_NAMESPACE (eventdb-system), SAMPLE (operator/examples/cluster-3-nodes.yaml)
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$repo"
ns="${RUN_NAMESPACE:-eventdb-demo}"
opns="${OPERATOR_NAMESPACE:-eventdb-system}"
sample="${SAMPLE:-operator/examples/cluster-3-nodes.yaml}"
registry="${IMAGE_REGISTRY:-}"
t_start=$(date +%s)
step() { echo "[run $(date -u +%H:%M:%S) +$(( $(date +%s) - t_start ))s] $*"; }

if [[ -n "${KUBECONFIG:-}" ]]; then
  step "using the cluster in KUBECONFIG=$KUBECONFIG"
  kubectl_bin="$(command -v kubectl || true)"; helm_bin="$(command -v helm || true)"
  [[ -x "$repo/.local/k8s/bin/kubectl" && -z "$kubectl_bin" ]] && kubectl_bin="$repo/.local/k8s/bin/kubectl"
  [[ -x "$repo/.local/k8s/bin/helm" && -z "$helm_bin" ]] && helm_bin="$repo/.local/k8s/bin/helm"
  [[ -n "$registry" ]] || step "IMAGE_REGISTRY is not set: the cluster must already have eventdb:dev and eventdb-operator:dev (kind: kind load)"
else
  if [[ "${1:-}" == stop ]]; then :
  elif ! test/k8s/cluster.sh status >/dev/null 2>&1; then
    step "creating the local kind cluster (the first time builds it from Go modules: tens of minutes; see README)"
    make --no-print-directory k8s-up
  else
    step "the local kind cluster runs"
  fi
  export KUBECONFIG="$repo/.local/k8s/kubeconfig"
  kubectl_bin="$repo/.local/k8s/bin/kubectl"; helm_bin="$repo/.local/k8s/bin/helm"
fi
[[ -n "$kubectl_bin" && -n "$helm_bin" ]] || { echo "kubectl and helm are needed (make k8s-up installs both in .local/k8s/bin)" >&2; exit 1; }
k() { "$kubectl_bin" "$@"; }

if [[ "${1:-}" == stop ]]; then
  step "deleting namespace $ns (the demo cluster and its data)"
  k delete namespace "$ns" --ignore-not-found --wait=true
  step "uninstalling the operator (the CRDs stay: kubectl delete -f crds/ removes them)"
  "$helm_bin" uninstall eventdb-operator --namespace "$opns" --wait 2>/dev/null || true
  k delete namespace "$opns" --ignore-not-found --wait=true
  exit 0
fi

step "building the images eventdb:dev and eventdb-operator:dev${registry:+ and pushing them to $registry} (minutes)"
IMAGE_REGISTRY="$registry" make --no-print-directory images
prefix="${registry:+$registry/}"

# The CRDs first, by server-side apply: they may be there already (an earlier install, kubectl apply -f crds/),
# owned by no Helm release or another one.
step "installing the CRDs (crds/)"
k apply --server-side --force-conflicts -f crds/ >/dev/null
step "installing the operator (chart charts/eventdb-operator) in namespace $opns"
"$helm_bin" upgrade --install eventdb-operator charts/eventdb-operator --namespace "$opns" --create-namespace \
  --set crds.install=false \
  --set "image.repository=${prefix}eventdb-operator" --set image.tag=dev --set "nodeImage=${prefix}eventdb:dev" \
  --wait --timeout 5m

k create namespace "$ns" --dry-run=client -o yaml | k apply -f - >/dev/null
name="$(k create --dry-run=client -o jsonpath='{.metadata.name}' -f "$sample")"
step "creating EventDBCluster $name from $sample in namespace $ns"
k apply -n "$ns" -f "$sample" >/dev/null

deadline=$(( $(date +%s) + 900 ))
while :; do
  ready="$(k get edb "$name" -n "$ns" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null || true)"
  reason="$(k get edb "$name" -n "$ns" -o jsonpath='{.status.conditions[?(@.type=="Ready")].reason}' 2>/dev/null || true)"
  [[ "$ready" == True ]] && break
  degraded="$(k get edb "$name" -n "$ns" -o jsonpath='{.status.conditions[?(@.type=="Degraded")].reason}' 2>/dev/null || true)"
  if [[ "$reason" == ClusteringUnsupported || "$reason" == InvalidSpec ]]; then
    step "EventDBCluster $name cannot run: $(k get edb "$name" -n "$ns" -o jsonpath='{.status.conditions[?(@.type=="Ready")].message}')"
    k get edb,pods -n "$ns"; exit 1
  fi
  if (( $(date +%s) > deadline )); then
    step "not Ready after 15 minutes:"; k get edb,pods -n "$ns"; exit 1
  fi
  progress="$(k get edb "$name" -n "$ns" -o jsonpath='ready {.status.readyReplicas}/{.spec.replicas}, phase {.status.phase}, leader {.status.leader}' 2>/dev/null || true)"
  step "waiting for $name: ${progress:-no status yet} ${reason:+($reason)}${degraded:+ degraded: $degraded}"
  sleep 10
done

step "EventDBCluster $name is Ready:"
k get edb "$name" -n "$ns"
cat <<EOT

Reach it (leader, for writes and reads):
  kubectl port-forward -n $ns svc/$name-leader 2113:2113
  kubectl get secret $name-node-tls -n $ns -o jsonpath='{.data.ca\\.crt}' | base64 -d > $name-ca.crt
  curl --cacert $name-ca.crt --resolve $name-leader:2113:127.0.0.1 https://$name-leader:2113/info
  (with tls.mode Disabled: http://127.0.0.1:2113)
Admin credentials (Secret $name-admin):
  kubectl get secret $name-admin -n $ns -o jsonpath='{.data.password}' | base64 -d; echo
Watch it:
  kubectl get edb -n $ns -w          kubectl describe edb $name -n $ns
Stop:
  make run-stop      (deletes the cluster, its data and the operator)      make k8s-down   (the whole kind cluster)
EOT
[[ -n "${KUBECONFIG:-}" && "$KUBECONFIG" == "$repo/.local/k8s/kubeconfig" ]] && echo "(kubectl here: export KUBECONFIG=$KUBECONFIG PATH=$repo/.local/k8s/bin:\$PATH)"
step "done"
