#!/usr/bin/env bash
# The kind cluster of this checkout (the only way this project runs Kubernetes).
#   cluster.sh up           create the cluster (or reuse it; `make images` loads the images into it): kind, provider Docker where a daemon answers, else rootful
#                           podman; node image kindest/node where it can be pulled, else assembled offline
#                           (node-image.sh); pod network, CSI hostpath storage, VolumeSnapshots. Writes
#                           .local/k8s/kubeconfig and links kubectl, helm and kind into .local/k8s/bin. Idempotent.
#   cluster.sh down [--images]
#                           delete the cluster and every trace it left on the host (containers, volumes, its podman
#                           network, and once no podman container is left: netavark's firewall chains, network
#                           namespaces and their mounts, podman's cgroups, sysctls as they were before); with
#                           --images also the images `make images` and the node image made. Idempotent.
#   cluster.sh status       print the cluster's nodes (exit 1 when it does not run)
#   cluster.sh load FILE... load image archives (docker-archive / OCI) into the cluster's nodes
#   cluster.sh has-images   exit 0 when every node holds the images given on stdin as "REF ID" lines
#   cluster.sh name         print the cluster name of this checkout
#   cluster.sh exists       exit 0 when the cluster exists
# Environment: EVENTDB_K8S_WORKERS (worker nodes, default 0), EVENTDB_K8S_NODE_IMAGE (force a node image),
#              EVENTDB_K8S_PROVIDER (docker|podman), EVENTDB_K8S_CLUSTER (cluster name).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"
state="$repo/.local/k8s"
cluster="${EVENTDB_K8S_CLUSTER:-eventdb-$(echo -n "$repo" | sha256sum | cut -c1-8)}"
workers="${EVENTDB_K8S_WORKERS:-0}"
log() { echo "[k8s $(date -u +%H:%M:%S)] $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

provider() { "$here/host-setup.sh"; }
kind_bin() { echo "$("$here/build.sh" --dir kind)/kind"; }
kubectl() { "$state/bin/kubectl" --kubeconfig "$state/kubeconfig" "$@"; }

# kind, with the provider and (podman) a network of this cluster's own, so that deleting it touches no other cluster
kind_() {
  KIND_EXPERIMENTAL_PROVIDER="$prov" KIND_EXPERIMENTAL_PODMAN_NETWORK="$cluster" "$(kind_bin)" "$@"
}

engine() { if [[ "$prov" == docker ]]; then docker "$@"; else podman "$@"; fi; }

# Whether this checkout's cluster exists. Listing goes through podman, which fails now and then while another podman
# command holds its lock (an image load or save beside it): a failed listing is retried, never read as "no cluster"
# (CI once failed a test with "does not run" against a running cluster).
cluster_exists() {
  local out i
  for ((i = 1; i <= 10; i++)); do
    if out="$(kind_ get clusters 2>&1)"; then
      grep -qx "$cluster" <<<"$out"
      return
    fi
    log "listing kind clusters failed (attempt $i of 10): ${out//$'\n'/ }"
    sleep 2
  done
  die "cannot list kind clusters: ${out//$'\n'/ }"
}
node_names() { kind_ get nodes --name "$cluster" 2>/dev/null; }

wait_for() { # wait_for SECONDS DESCRIPTION CMD...
  local secs="$1" what="$2" i; shift 2
  for ((i = 0; i < secs * 2; i++)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.5
  done
  die "timed out after ${secs}s waiting for $what"
}

link_tools() {
  local k8s helm
  k8s="$("$here/build.sh" --dir kubernetes)"; helm="$("$here/build.sh" --dir helm)"
  mkdir -p "$state/bin"
  ln -sfn "$k8s/kubectl" "$state/bin/kubectl"
  ln -sfn "$helm/helm" "$state/bin/helm"
  ln -sfn "$(kind_bin)" "$state/bin/kind"
}

# ---------- host state (podman) ----------
# Sysctls the cluster changes on the host: podman's network stack turns forwarding on, the kubelet in a privileged
# node sets kernel-wide values. The values from before the first cluster are kept in /run (gone at reboot, as they
# would be) and restored when the last podman container is gone.
SYSCTLS=(net.ipv4.ip_forward net.ipv6.conf.all.forwarding net.ipv6.conf.default.forwarding vm.overcommit_memory
  vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys kernel.keys.root_maxbytes)
host_state=/run/eventdb-k8s
record_sysctls() {
  [[ -f "$host_state/sysctl-before" ]] && return 0
  if [[ -n "$(podman ps -aq 2>/dev/null)" ]]; then
    log "WARNING: podman containers exist already: the sysctls recorded now may not be the host's own"
  fi
  mkdir -p "$host_state"
  local s
  for s in "${SYSCTLS[@]}"; do
    [[ -e "/proc/sys/${s//.//}" ]] && echo "$s=$(cat "/proc/sys/${s//.//}")"
  done > "$host_state/sysctl-before.tmp"
  mv "$host_state/sysctl-before.tmp" "$host_state/sysctl-before"
}

restore_sysctls() {
  [[ -f "$host_state/sysctl-before" ]] || return 0
  local line k v
  while IFS= read -r line; do
    k="${line%%=*}"; v="${line#*=}"
    if [[ "$(cat "/proc/sys/${k//.//}" 2>/dev/null)" != "$v" ]]; then
      log "restoring $k=$v"
      echo "$v" > "/proc/sys/${k//.//}" || log "WARNING: could not restore $k"
    fi
  done < "$host_state/sysctl-before"
  # check-clean.sh compares with the record, then removes it
}

# Leftovers of podman's network stack and runtime, removed once no podman container exists (on a machine without
# containers they are nobody's).
clean_podman_host() {
  if [[ -n "$(podman ps -aq 2>/dev/null)" ]]; then
    log "other podman containers exist: leaving podman's shared network state alone"
    return 0
  fi
  local t c n m
  # working containers of image builds that were interrupted (their mounts stay), when no build runs now
  if [[ -n "$(podman ps -aq --external --filter status=unknown 2>/dev/null; podman ps -a --external --format '{{.Names}}' 2>/dev/null | grep -- '-working-container$' || true)" ]] \
    && ! pgrep -f '(podman|buildah) (build|bud)' >/dev/null; then
    log "removing the working containers of interrupted image builds"
    buildah rm --all >/dev/null 2>&1 || podman rm -af --external >/dev/null 2>&1 || true
  fi
  # netavark's firewall chains (iptables backend) and any nft table it made
  for t in filter nat mangle; do
    while IFS= read -r c; do
      iptables -t "$t" -F "$c" 2>/dev/null || true
    done < <(iptables -t "$t" -S 2>/dev/null | awk '/^-N NETAVARK/ {print $2}')
    # jumps into them from the built-in chains
    while IFS= read -r rule; do
      eval "iptables -t $t ${rule/-A /-D }" 2>/dev/null || true
    done < <(iptables -t "$t" -S 2>/dev/null | grep -E '^-A [A-Z]+ .*-j NETAVARK' || true)
    while IFS= read -r c; do
      iptables -t "$t" -X "$c" 2>/dev/null || true
    done < <(iptables -t "$t" -S 2>/dev/null | awk '/^-N NETAVARK/ {print $2}')
  done
  for t in $(ip6tables -t nat -S 2>/dev/null | awk '/^-N NETAVARK/ {print $2}'); do ip6tables -t nat -F "$t" 2>/dev/null || true; done
  for t in filter nat mangle; do
    while IFS= read -r rule; do
      eval "ip6tables -t $t ${rule/-A /-D }" 2>/dev/null || true
    done < <(ip6tables -t "$t" -S 2>/dev/null | grep -E '^-A [A-Z]+ .*-j NETAVARK' || true)
    while IFS= read -r c; do
      ip6tables -t "$t" -F "$c" 2>/dev/null || true; ip6tables -t "$t" -X "$c" 2>/dev/null || true
    done < <(ip6tables -t "$t" -S 2>/dev/null | awk '/^-N NETAVARK/ {print $2}')
  done
  if command -v nft >/dev/null; then
    while read -r fam name; do
      nft delete table "$fam" "$name" 2>/dev/null || true
    done < <(nft list tables 2>/dev/null | awk '$3 ~ /^netavark/ {print $2, $3}')
  fi
  # network namespaces podman made (netns-<uuid>) and their bind mounts
  for n in /run/netns/netns-*; do
    [[ -e "$n" ]] || continue
    umount "$n" 2>/dev/null || true
    rm -f "$n"
  done
  if mountpoint -q /run/netns 2>/dev/null && [[ -z "$(ls -A /run/netns 2>/dev/null)" ]]; then
    umount /run/netns 2>/dev/null || true
  fi
  # bridges of podman networks that are gone
  for n in $(ip -o link show type bridge 2>/dev/null | awk -F': ' '{print $2}' | grep -E '^podman[0-9]+$' || true); do
    ip link delete "$n" 2>/dev/null || true
  done
  # podman's cgroups (cgroupfs manager): deepest first, only empty ones
  for m in /sys/fs/cgroup/*/ /sys/fs/cgroup/unified/; do
    [[ -d "$m/libpod_parent" ]] || continue
    find "$m/libpod_parent" -depth -type d -exec rmdir {} \; 2>/dev/null || true
  done
  restore_sysctls
}

# ---------- up ----------
kind_config() { # kind_config OFFLINE(yes|no)
  echo "kind: Cluster"
  echo "apiVersion: kind.x-k8s.io/v1alpha4"
  echo "networking:"
  echo "  apiServerAddress: 127.0.0.1"
  [[ "$1" == yes ]] && echo "  disableDefaultCNI: true"
  echo "nodes:"
  local i
  for ((i = 0; i <= workers; i++)); do
    if ((i == 0)); then echo "- role: control-plane"; else echo "- role: worker"; fi
    # the CSI hostpath driver's snapshots: one host directory shared by every node
    echo "  extraMounts: [{hostPath: \"$state/snapshots\", containerPath: /var/lib/csi-hostpath-snapshots}]"
  done
  echo "kubeadmConfigPatches:"
  if [[ "$1" == yes ]]; then
    cat <<EOF
- |
  kind: ClusterConfiguration
  imageRepository: localhost/eventdb-kind
  etcd:
    local:
      imageTag: $ETCD_VERSION
  dns:
    imageTag: $COREDNS_VERSION
EOF
  fi
  # cgroup v1 hosts (this one is): the kubelet refuses them by default since v1.35
  cat <<'EOF'
- |
  kind: KubeletConfiguration
  failCgroupV1: false
EOF
}

has_pod_cidr() { [[ -n "$(kubectl get node "$1" -o jsonpath='{.spec.podCIDR}' 2>/dev/null)" ]]; }

# The pod network of the offline node image: ptp + host-local on each node's podCIDR, and routes to the other
# nodes' podCIDRs through their addresses on the cluster's bridge (what kindnetd does, written once at start).
setup_pod_network() {
  local n cidr ip others
  declare -A cidr_of=() ip_of=()
  for n in $(node_names); do
    wait_for 60 "podCIDR of $n" has_pod_cidr "$n"
    cidr_of[$n]="$(kubectl get node "$n" -o jsonpath='{.spec.podCIDR}')"
    ip_of[$n]="$(kubectl get node "$n" -o jsonpath='{.status.addresses[?(@.type=="InternalIP")].address}')"
  done
  for n in "${!cidr_of[@]}"; do
    cidr="${cidr_of[$n]}"
    engine exec -i "$n" sh -c 'mkdir -p /etc/cni/net.d && cat > /etc/cni/net.d/10-eventdb.conflist.tmp && mv /etc/cni/net.d/10-eventdb.conflist.tmp /etc/cni/net.d/10-eventdb.conflist' <<EOF
{
  "cniVersion": "1.0.0",
  "name": "eventdb-pods",
  "plugins": [
    {
      "type": "ptp",
      "ipMasq": false,
      "ipam": {
        "type": "host-local",
        "dataDir": "/run/cni-ipam-state",
        "routes": [{"dst": "0.0.0.0/0"}],
        "ranges": [[{"subnet": "$cidr"}]]
      },
      "mtu": 1500
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
    for others in "${!cidr_of[@]}"; do
      [[ "$others" == "$n" ]] && continue
      engine exec "$n" ip route replace "${cidr_of[$others]}" via "${ip_of[$others]}"
    done
  done
}

apply_addons() { # apply_addons OFFLINE
  local imgs
  imgs="$("$here/node-image.sh" --image-names)"
  eval "$imgs"
  if [[ "$1" != yes ]]; then
    # a kindest/node cluster: our add-on images are loaded, kind's local-path StorageClass makes room for ours,
    # the VolumeSnapshot CRDs are applied here
    local d
    d="$("$here/node-image.sh" --addons)"
    kind_ load image-archive --name "$cluster" "$d"/*.tar >&2
    if [[ "$(kubectl get storageclass standard -o jsonpath='{.provisioner}' 2>/dev/null)" != hostpath.csi.eventdb.local ]]; then
      kubectl delete storageclass standard --ignore-not-found >&2
    fi
    kubectl apply --server-side -f "$("$here/build.sh" --dir csi)/crds" >&2
  fi
  wait_for 60 "the VolumeSnapshot CRDs" kubectl wait --for condition=established --timeout=1s \
    crd/volumesnapshots.snapshot.storage.k8s.io crd/volumesnapshotcontents.snapshot.storage.k8s.io \
    crd/volumesnapshotclasses.snapshot.storage.k8s.io
  sed -e "s|@HOSTPATH_IMAGE@|$HOSTPATH_IMAGE|" -e "s|@PROVISIONER_IMAGE@|$PROVISIONER_IMAGE|" \
    -e "s|@SNAPSHOTTER_IMAGE@|$SNAPSHOTTER_IMAGE|" -e "s|@SNAPSHOT_CONTROLLER_IMAGE@|$SNAPSHOT_CONTROLLER_IMAGE|" \
    "$here/addons/storage.yaml" | kubectl apply --server-side --force-conflicts -f - >&2
}

up() {
  local t0 node_image offline=no
  t0=$(date +%s)
  prov="$(provider)"
  [[ "$prov" == podman ]] && record_sysctls
  "$here/build.sh" kubernetes helm kind >/dev/null
  link_tools
  local answers=no
  if cluster_exists && [[ -f "$state/kubeconfig" ]] && kubectl get --raw /readyz >/dev/null 2>&1; then
    answers=yes
    if [[ -f "$state/ready" ]]; then
      log "cluster $cluster runs already (kubeconfig $state/kubeconfig)"
      return 0
    fi
  fi
  if [[ -n "${EVENTDB_K8S_NODE_IMAGE:-}" ]]; then
    node_image="$EVENTDB_K8S_NODE_IMAGE"
  elif engine image inspect "$KIND_NODE_IMAGE" >/dev/null 2>&1 || timeout 120 "$prov" pull "$KIND_NODE_IMAGE" >/dev/null 2>&1; then
    node_image="$KIND_NODE_IMAGE"
  else
    [[ "$prov" == podman ]] || die "cannot pull $KIND_NODE_IMAGE with Docker (the offline node image is made with podman)"
    log "$KIND_NODE_IMAGE cannot be pulled: using the node image assembled offline"
    node_image="$("$here/node-image.sh" | tail -1)"
  fi
  [[ "$node_image" == localhost/eventdb-kind/* ]] && offline=yes
  if [[ "$answers" == yes ]]; then
    log "cluster $cluster exists: finishing its set-up"
  else
    if cluster_exists; then
      log "cluster $cluster exists but does not answer: deleting it first"
      kind_ delete cluster --name "$cluster" >&2
    fi
    mkdir -p "$state/snapshots"
    kind_config "$offline" > "$state/kind-config.yaml"
    log "creating kind cluster $cluster ($prov, $node_image, $((workers + 1)) node(s))"
    local tc=$(date +%s)
    kind_ create cluster --name "$cluster" --image "$node_image" --config "$state/kind-config.yaml" \
      --kubeconfig "$state/kubeconfig" --wait 0s >&2
    log "kind create took $(( $(date +%s) - tc ))s"
    chmod 600 "$state/kubeconfig"
  fi
  [[ "$offline" == yes ]] && setup_pod_network
  apply_addons "$offline"
  wait_for 120 "nodes Ready" kubectl wait --for=condition=Ready nodes --all --timeout=1s
  wait_for 120 "CoreDNS" kubectl -n kube-system rollout status deployment/coredns --timeout=1s
  wait_for 120 "the snapshot controller" kubectl -n kube-system rollout status deployment/snapshot-controller --timeout=1s
  wait_for 120 "the CSI hostpath driver" kubectl -n kube-system rollout status daemonset/csi-hostpath --timeout=1s
  wait_for 60 "the CSI driver's registration on every node" csi_registered
  wait_for 60 "service account default/default" kubectl get serviceaccount default -n default
  touch "$state/ready"
  log "cluster $cluster up in $(( $(date +%s) - t0 ))s: export KUBECONFIG=$state/kubeconfig PATH=$state/bin:\$PATH"
}

csi_registered() {
  local n
  for n in $(node_names); do
    kubectl get csinode "$n" -o jsonpath='{.spec.drivers[*].name}' 2>/dev/null | grep -q hostpath.csi.eventdb.local || return 1
  done
}

load() {
  prov="${prov:-$(provider)}"
  cluster_exists || die "cluster $cluster does not run (make k8s-up)"
  local t0=$(date +%s)
  kind_ load image-archive --name "$cluster" "$@" >&2
  log "loaded $* in $(( $(date +%s) - t0 ))s"
}

# has_images < "REF ID" lines: every node's containerd holds each REF as the image ID
has_images() {
  prov="${prov:-$(provider)}"
  cluster_exists || return 1
  local n ref id got
  while read -r ref id; do
    [[ -n "$ref" ]] || continue
    for n in $(node_names); do
      got="$(engine exec "$n" crictl inspecti -o go-template --template '{{.status.id}}' "$ref" 2>/dev/null)" || return 1
      [[ "${got#sha256:}" == "${id#sha256:}" ]] || return 1
    done
  done
}

# ---------- down ----------
# What the cluster's containers hold on the host, written before they are deleted so that check-clean.sh can prove
# each of these is gone even while other podman containers run: container ids (their processes, cgroups and
# mounts carry them), network namespaces, and the cluster network's bridge and subnets (firewall rules name them).
record_trace() {
  local c
  mkdir -p "$host_state"
  {
    for c in $(podman ps -aq --no-trunc --filter "label=io.x-k8s.kind.cluster=$cluster" 2>/dev/null); do
      echo "container $c $(podman inspect "$c" --format '{{.NetworkSettings.SandboxKey}}' 2>/dev/null)"
    done
    if podman network exists "$cluster" 2>/dev/null; then
      podman network inspect "$cluster" --format 'network {{.NetworkInterface}} {{range .Subnets}}{{.Subnet}} {{end}}'
    fi
  } > "$host_state/trace-$cluster.tmp"
  if [[ -s "$host_state/trace-$cluster.tmp" ]]; then
    mv "$host_state/trace-$cluster.tmp" "$host_state/trace-$cluster"
  else
    rm -f "$host_state/trace-$cluster.tmp"
  fi
}

down() {
  local images=no
  [[ "${1:-}" == --images ]] && images=yes
  prov="$(provider)"
  [[ "$prov" == podman ]] && record_trace
  if [[ -x "$(kind_bin)" ]] && cluster_exists; then
    log "deleting kind cluster $cluster"
    kind_ delete cluster --name "$cluster" >&2
  fi
  if [[ "$prov" == podman ]]; then
    # what kind may leave when interrupted: the node containers and their /var volumes, and the network
    local c v
    for c in $(podman ps -aq --filter "label=io.x-k8s.kind.cluster=$cluster" 2>/dev/null); do podman rm -f -v "$c" >&2 || true; done
    # kind labels a node's /var volume with "<node name>=true"
    for v in $(podman volume ls --format '{{.Name}} {{.Labels}}' 2>/dev/null | grep -E "[[ ]$cluster-(control-plane|worker[0-9]*):true" | awk '{print $1}' || true); do
      podman volume rm -f "$v" >&2 || true
    done
    if podman network exists "$cluster" 2>/dev/null; then podman network rm -f "$cluster" >&2 || true; fi
    if [[ "$images" == yes ]]; then
      local i
      for i in $(podman images --format '{{.Repository}}:{{.Tag}}' 2>/dev/null | grep -E '^(localhost/eventdb-kind/|localhost/eventdb-base/|localhost/eventdb(-operator)?:|docker.io/library/eventdb(-operator)?:)' || true); do
        podman rmi -f "$i" >&2 || true
      done
      podman image prune -f >/dev/null 2>&1 || true
    fi
    clean_podman_host
  fi
  rm -rf "$state"
  log "cluster $cluster down"
  "$here/check-clean.sh" "$cluster"
}

status() {
  prov="$(provider)"
  cluster_exists || { echo "cluster $cluster: not running"; return 1; }
  echo "cluster $cluster ($prov), kubeconfig $state/kubeconfig"
  kubectl get nodes -o wide
}

case "${1:-}" in
  up) up ;;
  down) shift; down "$@" ;;
  status) status ;;
  load) shift; load "$@" ;;
  has-images) has_images ;;
  name) echo "$cluster" ;;
  exists) prov="$(provider)"; cluster_exists ;;
  *) echo "usage: $0 up|down [--images]|status|load FILE...|has-images|name|exists" >&2; exit 2 ;;
esac
