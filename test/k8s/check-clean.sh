#!/usr/bin/env bash
# Proves that a deleted kind cluster left nothing behind on the host; exits 1 and lists what is left otherwise.
#   check-clean.sh [CLUSTER]     (default: this checkout's cluster)
# Always: no container, volume, network or node process of the cluster, no .local/k8s. Once no podman container is
# left on the machine at all: no netavark firewall chain or nft table, no network namespace or bind mount of podman,
# no container mount, no podman bridge or veth, no podman cgroup, no conmon, and the sysctls as recorded before
# the first cluster (then the record is removed).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cluster="${1:-$("$here/cluster.sh" name)}"
left=()
note() { left+=("$*"); }

[[ -e "$repo/.local/k8s" ]] && note ".local/k8s still exists"

if command -v podman >/dev/null 2>&1; then
  [[ -n "$(podman ps -aq --filter "label=io.x-k8s.kind.cluster=$cluster" 2>/dev/null)" ]] && note "containers of $cluster: $(podman ps -a --filter "label=io.x-k8s.kind.cluster=$cluster" --format '{{.Names}}' | tr '\n' ' ')"
  podman volume ls --format '{{.Name}} {{.Labels}}' 2>/dev/null | grep -qE "[[ ]$cluster-(control-plane|worker[0-9]*):true" && note "volumes of $cluster's nodes"
  podman network exists "$cluster" 2>/dev/null && note "podman network $cluster"
  # what this cluster's containers held on the host (recorded by cluster.sh down before it deleted them)
  trace="/run/eventdb-k8s/trace-$cluster"
  if [[ -f "$trace" ]]; then
    while read -r kind a b; do
      case "$kind" in
        container)
          p="$(grep -l -- "$a" /proc/[0-9]*/cgroup 2>/dev/null | cut -d/ -f3 | tr '\n' ' ')"
          [[ -n "$p" ]] && note "processes in the cgroups of node container ${a:0:12}: $p"
          cg="$(find /sys/fs/cgroup -maxdepth 4 -type d -name "*$a*" 2>/dev/null | tr '\n' ' ')"
          [[ -n "$cg" ]] && note "cgroups of node container ${a:0:12}: $cg"
          m="$(grep -F -- "$a" /proc/self/mountinfo | awk '{print $5}' | tr '\n' ' ')"
          [[ -n "$m" ]] && note "mounts of node container ${a:0:12}: $m"
          if [[ -n "$b" ]]; then
            [[ -e "$b" ]] && note "network namespace $b of node container ${a:0:12}"
            grep -qF -- " $b " /proc/self/mountinfo && note "mount of network namespace $b"
          fi
          ;;
        network)
          [[ -n "$a" ]] && ip link show "$a" >/dev/null 2>&1 && note "bridge $a of network $cluster"
          for sub in $b; do
            r="$( { iptables-save 2>/dev/null; ip6tables-save 2>/dev/null; nft list ruleset 2>/dev/null; } | grep -cF -- "$sub")"
            [[ "$r" -gt 0 ]] && note "$r firewall rule(s) naming the network's subnet $sub"
            ip route show 2>/dev/null | grep -qF -- "${sub%/*}" && note "a route to the network's subnet $sub"
          done
          ;;
      esac
    done < "$trace"
  fi
  others="$(podman ps -aq 2>/dev/null | wc -l)"
  if [[ "$others" -gt 0 ]]; then
    echo "[k8s-check] $others other podman container(s) run on this machine: host-wide checks (firewall, netns, cgroups, sysctls) skipped" >&2
  else
    for t in filter nat mangle; do
      c="$(iptables -t "$t" -S 2>/dev/null | grep -c NETAVARK)"; [[ "$c" -gt 0 ]] && note "iptables $t: $c NETAVARK rule(s)/chain(s)"
      c="$(ip6tables -t "$t" -S 2>/dev/null | grep -c NETAVARK)"; [[ "$c" -gt 0 ]] && note "ip6tables $t: $c NETAVARK rule(s)/chain(s)"
    done
    if command -v nft >/dev/null 2>&1; then
      t="$(nft list tables 2>/dev/null | grep -i netavark | tr '\n' ' ')"; [[ -n "$t" ]] && note "nft tables: $t"
    fi
    n="$(ls /run/netns/ 2>/dev/null | grep -E '^netns-' | tr '\n' ' ')"; [[ -n "$n" ]] && note "network namespaces: $n"
    m="$(grep -E ' /run/netns/netns-| /var/lib/containers/storage/overlay/[^ ]+/merged | /run/containers/storage/overlay-containers/' /proc/self/mountinfo | awk '{print $5}' | tr '\n' ' ')"
    [[ -n "$m" ]] && note "mounts: $m"
    b="$(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | grep -E '^podman[0-9]+$|^veth' | tr '\n' ' ')"; [[ -n "$b" ]] && note "interfaces: $b"
    cg="$(ls -d /sys/fs/cgroup/*/libpod_parent /sys/fs/cgroup/unified/libpod_parent 2>/dev/null | tr '\n' ' ')"; [[ -n "$cg" ]] && note "cgroups: $cg"
    p="$(pgrep -x conmon | tr '\n' ' ')"; [[ -n "$p" ]] && note "conmon processes: $p"
    p="$(grep -l libpod /proc/[0-9]*/cgroup 2>/dev/null | cut -d/ -f3 | tr '\n' ' ')"; [[ -n "$p" ]] && note "processes in podman cgroups: $p"
    if [[ -f /run/eventdb-k8s/sysctl-before ]]; then
      while IFS= read -r line; do
        k="${line%%=*}"; v="${line#*=}"; cur="$(cat "/proc/sys/${k//.//}" 2>/dev/null)"
        [[ "$cur" != "$v" ]] && note "sysctl $k is $cur, was $v before the cluster"
      done < /run/eventdb-k8s/sysctl-before
    fi
  fi
fi

if ((${#left[@]})); then
  echo "[k8s-check] LEFT BEHIND by cluster $cluster:" >&2
  printf '  - %s\n' "${left[@]}" >&2
  exit 1
fi
rm -f "/run/eventdb-k8s/trace-$cluster"
# the sysctl record has served its purpose once everything is as it was
if [[ "${others:-0}" -eq 0 ]]; then rm -rf /run/eventdb-k8s; fi
echo "[k8s-check] nothing left behind by cluster $cluster" >&2
