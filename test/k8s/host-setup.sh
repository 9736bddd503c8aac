#!/usr/bin/env bash
# Host preparation for the kind cluster, idempotent (run by `make k8s-up` and `make images`).
#   - where a Docker daemon answers, nothing is installed: kind and the images use Docker;
#   - otherwise podman (rootful) and buildah from Debian, plus mmdebstrap for the offline base images,
#     configured as this host needs (see README, "Podman host settings"):
#       runc instead of crun (crun refuses hybrid cgroup v1/v2 hosts), default ulimits that need no
#       raising (no CAP_SYS_RESOURCE here), an (empty) /lib/modules that kind's podman provider mounts.
# Prints the provider last: docker or podman.
set -euo pipefail
log() { echo "[k8s-host $(date -u +%H:%M:%S)] $*" >&2; }

if [[ "${EVENTDB_K8S_PROVIDER:-}" != podman ]] && command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
  echo docker
  exit 0
fi

[[ "$(id -u)" == 0 ]] || { log "ERROR: rootful podman needs root (or a Docker daemon: none answers here)"; exit 1; }

# Debian packages: podman and its network stack, buildah (image builds from a rootfs), mmdebstrap (rootfs),
# runc, iptables/nftables (podman's networks and the teardown check), uidmap (containers/storage wants it).
pkgs=(podman buildah mmdebstrap runc netavark aardvark-dns conntrack iptables nftables uidmap ca-certificates
  debian-archive-keyring xz-utils zstd)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  command -v apt-get >/dev/null || { log "ERROR: no Docker daemon and no apt-get: install podman, buildah, mmdebstrap, runc"; exit 1; }
  log "installing from Debian: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

# containers.conf: runc, ulimits within the hard limits of this host (no CAP_SYS_RESOURCE), netavark.
conf=/etc/containers/containers.conf.d/50-eventdb-kind.conf
want='# written by eventdb test/k8s/host-setup.sh
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]

[engine]
runtime = "runc"

[network]
network_backend = "netavark"
'
mkdir -p "$(dirname "$conf")"
if ! printf '%s' "$want" | cmp -s - "$conf"; then
  log "writing $conf"
  printf '%s' "$want" > "$conf"
fi
# kind's podman provider bind-mounts /lib/modules (read-only) into the node
[[ -d /lib/modules ]] || { log "creating an empty /lib/modules"; mkdir -p /lib/modules; }

echo podman
