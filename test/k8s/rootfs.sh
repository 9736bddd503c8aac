#!/usr/bin/env bash
# Debian root filesystems for the images made offline (mmdebstrap from Debian's package mirror), cached by flavour,
# suite and package list as tars under ~/.cache/eventdb-k8s/rootfs/. Prints the tar's path.
#
#   rootfs.sh node     the kind node: systemd, containerd's helpers (runc, iptables, nftables, mount, ...),
#                      prepared as kind's own base image prepares it (images/base/Dockerfile of kind)
#   rootfs.sh netbase  minimal Debian with iptables, nftables and conntrack (kube-proxy's image)
#   rootfs.sh slim     minimal Debian with CA certificates (base of the Node.js image: bookworm-slim style)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"
cache_root="${EVENTDB_K8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/eventdb-k8s}"
log() { echo "[k8s-rootfs $(date -u +%H:%M:%S)] $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

flavour="${1:?usage: rootfs.sh node|netbase|slim}"
hooks=()
case "$flavour" in
  node)
    pkgs="systemd,conntrack,iptables,nftables,iproute2,ethtool,util-linux,mount,kmod,libseccomp2,pigz,e2fsprogs,bash,ca-certificates,curl,jq,procps,runc"
    # as kind's base image: no units but the ones kind enables, journald without kmsg, init = systemd
    hooks=(--customize-hook='rm -f "$1"/lib/systemd/system/sysinit.target.wants/systemd-tmpfiles-setup.service'
      --customize-hook='rm -f "$1"/lib/systemd/system/multi-user.target.wants/* "$1"/etc/systemd/system/*.wants/*'
      --customize-hook='rm -f "$1"/lib/systemd/system/local-fs.target.wants/* "$1"/lib/systemd/system/basic.target.wants/*'
      --customize-hook='rm -f "$1"/lib/systemd/system/sockets.target.wants/*udev* "$1"/lib/systemd/system/sockets.target.wants/*initctl*'
      --customize-hook='echo "ReadKMsg=no" >> "$1"/etc/systemd/journald.conf'
      --customize-hook='ln -sf /usr/lib/systemd/systemd "$1"/sbin/init'
      --customize-hook='ln -sf /dev/null "$1"/etc/systemd/system/systemd-binfmt.service'
      --customize-hook='mkdir -p "$1"/etc/kubernetes/manifests')
    ;;
  netbase) pkgs="iptables,nftables,conntrack,ca-certificates" ;;
  slim) pkgs="ca-certificates" ;;
  *) die "unknown flavour $flavour" ;;
esac
# documentation and caches are not needed in images
hooks+=(--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright'
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*'
  --customize-hook='rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/* "$1"/var/log/*.log')

key="$(echo "$flavour $DEBIAN_SUITE $pkgs ${hooks[*]}" | sha256sum | cut -c1-12)"
out="$cache_root/rootfs/$flavour-$DEBIAN_SUITE-$key.tar"
if [[ -f "$out" ]]; then echo "$out"; exit 0; fi
mkdir -p "$cache_root/rootfs"
exec 9>"$out.lock"
flock -w 1800 9 || die "could not take $out.lock"
if [[ -f "$out" ]]; then echo "$out"; exit 0; fi
command -v mmdebstrap >/dev/null || die "mmdebstrap is not installed (test/k8s/host-setup.sh installs it)"

t0=$(date +%s)
log "making the $flavour rootfs ($DEBIAN_SUITE: $pkgs)"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
security="${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}"
mmdebstrap --quiet --mode=root --variant=minbase --format=tar --include="$pkgs" "${hooks[@]}" "$DEBIAN_SUITE" "$out.tmp" \
  "deb $mirror $DEBIAN_SUITE main" "deb $mirror $DEBIAN_SUITE-updates main" "deb $security $DEBIAN_SUITE-security main" >&2
mv "$out.tmp" "$out"
log "$flavour rootfs made in $(( $(date +%s) - t0 ))s ($(du -h "$out" | cut -f1))"
echo "rootfs-$flavour $(( $(date +%s) - t0 ))" >> "$cache_root/build-times.txt"
echo "$out"
