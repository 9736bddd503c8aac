#!/usr/bin/env bash
# Assembles a kind node image offline, for when kindest/node cannot be pulled: the same layout as kind's own
# node image (kind's base files from its module, systemd, containerd, runc, crictl, CNI plugins, kubelet, kubeadm,
# kubectl, /kind/version) with every image the cluster needs already in containerd's store: the control plane,
# kube-proxy, etcd, CoreDNS, pause and the storage add-ons (test/k8s/addons). Everything comes from Go modules
# (build.sh) and Debian packages (rootfs.sh); the image is cached by content:
#   podman image   localhost/eventdb-kind/node:<K8S_VERSION>-<key>
#   archive        ~/.cache/eventdb-k8s/node-image/node-<key>.tar (re-loaded when podman's copy is gone)
#
#   node-image.sh            build (or find) the node image; prints its name last
#   node-image.sh --name     print the name the current inputs give (no build)
#   node-image.sh --addons   build only the add-on images (for a node image from a registry); prints their archive dir
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"
cache_root="${EVENTDB_K8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/eventdb-k8s}"
log() { echo "[k8s-node-image $(date -u +%H:%M:%S)] $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

REPO=localhost/eventdb-kind
bindir() { "$here/build.sh" --dir "$1"; }
tools_tag() { basename "$(dirname "$(bindir tools)")" | sed 's/^tools-//'; }

# the images' names (also used by cluster.sh for the add-ons' manifest)
image_names() {
  local t; t="$(tools_tag)"
  cat <<EOF
HOSTPATH_IMAGE=$REPO/csi-hostpath:$t
PROVISIONER_IMAGE=$REPO/csi-provisioner:$CSI_PROVISIONER_VERSION
SNAPSHOTTER_IMAGE=$REPO/csi-snapshotter:$CSI_SNAPSHOTTER_VERSION
SNAPSHOT_CONTROLLER_IMAGE=$REPO/snapshot-controller:$CSI_SNAPSHOTTER_VERSION
PAUSE_IMAGE=$REPO/pause:$t
EOF
}

key() {
  {
    cat "$here/versions.env" "$here/node-image.sh" "$here/rootfs.sh"
    tools_tag
  } | sha256sum | cut -c1-12
}
name_of() { echo "$REPO/node:$K8S_VERSION-$(key)"; }

case "${1:-}" in
  --name) name_of; exit 0 ;;
  --image-names) image_names; exit 0 ;;
esac

build_addon_images() { # build_addon_images OUTDIR
  local out="$1" csi tools mk t
  csi="$(bindir csi)"; tools="$(bindir tools)"; mk="$tools/mkimage"; t="$(tools_tag)"
  "$mk" --out "$out/csi-hostpath.tar" --name "$REPO/csi-hostpath:$t" \
    --file "$tools/csi-hostpath:/usr/local/bin/csi-hostpath:0755" --entrypoint '["/usr/local/bin/csi-hostpath"]'
  "$mk" --out "$out/csi-provisioner.tar" --name "$REPO/csi-provisioner:$CSI_PROVISIONER_VERSION" \
    --file "$csi/csi-provisioner:/usr/local/bin/csi-provisioner:0755" --entrypoint '["/usr/local/bin/csi-provisioner"]' --user 65532:65532
  "$mk" --out "$out/csi-snapshotter.tar" --name "$REPO/csi-snapshotter:$CSI_SNAPSHOTTER_VERSION" \
    --file "$csi/csi-snapshotter:/usr/local/bin/csi-snapshotter:0755" --entrypoint '["/usr/local/bin/csi-snapshotter"]' --user 65532:65532
  "$mk" --out "$out/snapshot-controller.tar" --name "$REPO/snapshot-controller:$CSI_SNAPSHOTTER_VERSION" \
    --file "$csi/snapshot-controller:/usr/local/bin/snapshot-controller:0755" --entrypoint '["/usr/local/bin/snapshot-controller"]' --user 65532:65532
}

if [[ "${1:-}" == --addons ]]; then
  "$here/build.sh" csi tools >&2
  d="$cache_root/addon-images/$(tools_tag)-$CSI_PROVISIONER_VERSION-$CSI_SNAPSHOTTER_VERSION"
  if [[ ! -f "$d/.complete" ]]; then
    rm -rf "$d"; mkdir -p "$d"; build_addon_images "$d"; touch "$d/.complete"
  fi
  echo "$d"
  exit 0
fi

if podman image exists "$(name_of)" 2>/dev/null; then name_of; exit 0; fi
# the Debian root filesystems download while Go compiles (each is cached and locked by rootfs.sh)
rootfs_pids=()
for flavour in node netbase slim; do "$here/rootfs.sh" "$flavour" >/dev/null & rootfs_pids+=($!); done
"$here/build.sh" >&2
for p in "${rootfs_pids[@]}"; do wait "$p" || die "a root filesystem could not be made (see above)"; done
name="$(name_of)"
archive="$cache_root/node-image/node-$(key).tar"
if podman image exists "$name" 2>/dev/null; then echo "$name"; exit 0; fi
mkdir -p "$cache_root/node-image"
exec 9>"$cache_root/node-image/.lock"
flock -w 3600 9 || die "could not take the node image lock"
if podman image exists "$name" 2>/dev/null; then echo "$name"; exit 0; fi
if [[ -f "$archive" ]]; then
  log "loading $name from $archive"
  podman load -q -i "$archive" >&2
  echo "$name"; exit 0
fi

t0=$(date +%s)
k8s="$(bindir kubernetes)"; etcd="$(bindir etcd)"; kindb="$(bindir kind)"; ctrd="$(bindir containerd)"
crictl="$(bindir crictl)"; coredns="$(bindir coredns)"; cni="$(bindir cni)"; tools="$(bindir tools)"
mk="$tools/mkimage"
work="$(mktemp -d /var/tmp/eventdb-node-image.XXXXXX)"
cstate=""
cleanup() {
  if [[ -n "$cstate" && -f "$cstate/pid" ]]; then kill "$(cat "$cstate/pid")" 2>/dev/null || true; sleep 1; fi
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/images" "$work/files" "$work/store"

# ---- images the node runs (docker-archives, one binary each unless noted) ----
log "making the component images"
for c in kube-apiserver kube-controller-manager kube-scheduler; do
  "$mk" --out "$work/images/$c.tar" --name "$REPO/$c:$K8S_VERSION" --file "$k8s/$c:/usr/local/bin/$c:0755" \
    --entrypoint "[\"/usr/local/bin/$c\"]"
done
# kube-proxy programs iptables/nftables: a Debian layer with them
"$mk" --out "$work/images/kube-proxy.tar" --name "$REPO/kube-proxy:$K8S_VERSION" --layer "$("$here/rootfs.sh" netbase)" \
  --file "$k8s/kube-proxy:/usr/local/bin/kube-proxy:0755" --entrypoint '["/usr/local/bin/kube-proxy"]'
"$mk" --out "$work/images/etcd.tar" --name "$REPO/etcd:$ETCD_VERSION" --file "$etcd/etcd:/usr/local/bin/etcd:0755" \
  --entrypoint '["/usr/local/bin/etcd"]'
"$mk" --out "$work/images/coredns.tar" --name "$REPO/coredns:$COREDNS_VERSION" --file "$coredns/coredns:/coredns:0755" \
  --entrypoint '["/coredns"]'
eval "$(image_names)"
"$mk" --out "$work/images/pause.tar" --name "$PAUSE_IMAGE" --file "$tools/pause:/pause:0755" --entrypoint '["/pause"]' --user 65535:65535
build_addon_images "$work/images"

# ---- the node's own files (kind's base image layout) ----
log "laying out the node's files"
f="$work/files"
base="$kindb/kind-base-files"
install -d "$f/usr/local/bin" "$f/usr/bin" "$f/kind/bin" "$f/kind/manifests" "$f/etc/containerd" "$f/etc/default" \
  "$f/etc/sysctl.d" "$f/etc/systemd/system/kubelet.service.d" "$f/etc/systemd/system/multi-user.target.wants" \
  "$f/opt/cni/bin" "$f/etc/cni/net.d" "$f/LICENSES" "$f/etc/kubernetes/manifests"
install -m 0755 "$base"/usr/local/bin/* "$f/usr/local/bin/"
cp -r "$base/kind/." "$f/kind/"; chmod 0644 "$f"/kind/*.txt 2>/dev/null || true; chmod 0755 "$f"/kind/bin/*
install -m 0644 "$base/etc/crictl.yaml" "$f/etc/"
install -m 0644 "$base"/etc/default/* "$f/etc/default/"
install -m 0644 "$base"/etc/sysctl.d/* "$f/etc/sysctl.d/"
install -m 0644 "$base"/etc/systemd/system/*.service "$base"/etc/systemd/system/*.slice "$f/etc/systemd/system/"
install -m 0644 "$base"/etc/systemd/system/kubelet.service.d/* "$f/etc/systemd/system/kubelet.service.d/"
install -m 0644 "$base"/LICENSES/* "$f/LICENSES/"
for u in kubelet.service containerd.service undo-mount-hacks.service; do
  ln -s "/etc/systemd/system/$u" "$f/etc/systemd/system/multi-user.target.wants/$u"
done
# containerd: no OOMScoreAdjust (processes here cannot lower oom_score_adj: no CAP_SYS_RESOURCE)
sed -i '/^OOMScoreAdjust=/d' "$f/etc/systemd/system/containerd.service"
# containerd's config: our pause image, and restrict_oom_score_adj for the same reason
sed -e "s|^\([[:space:]]*sandbox_image = \).*|\1\"$PAUSE_IMAGE\"|" \
    -e 's|^\([[:space:]]*restrict_oom_score_adj = \).*|\1true|' "$base/etc/containerd/config.toml" > "$f/etc/containerd/config.toml"
grep -q "sandbox_image = \"$PAUSE_IMAGE\"" "$f/etc/containerd/config.toml" || die "could not set the sandbox image in containerd's config"
grep -q 'restrict_oom_score_adj = true' "$f/etc/containerd/config.toml" || die "could not set restrict_oom_score_adj"
install -m 0755 "$ctrd/containerd" "$ctrd/containerd-shim-runc-v2" "$ctrd/ctr" "$crictl/crictl" "$f/usr/local/bin/"
install -m 0755 "$k8s/kubelet" "$k8s/kubeadm" "$k8s/kubectl" "$f/usr/bin/"
install -m 0755 "$cni"/* "$f/opt/cni/bin/"
printf '%s' "$K8S_VERSION" > "$f/kind/version"
# the runtime's base OCI spec, made as kind's base image makes it (ctr oci spec + kind's product-uuid hook, no rlimits)
"$ctrd/ctr" oci spec | node -e '
  let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => {
    const spec = JSON.parse(s);
    spec.hooks ??= {}; spec.hooks.createContainer ??= [];
    spec.hooks.createContainer.push({ path: "/kind/bin/mount-product-files.sh" });
    delete spec.process.rlimits;
    process.stdout.write(JSON.stringify(spec, null, 2));
  });' > "$f/etc/containerd/cri-base.json"
# kind applies /kind/manifests/default-storage.yaml while it creates the cluster: the VolumeSnapshot CRDs
# (the storage add-ons that use them are applied by cluster.sh once the CRDs are established)
for crd in "$(bindir csi)"/crds/*.yaml; do echo "---"; cat "$crd"; done > "$f/kind/manifests/default-storage.yaml"
tar --numeric-owner --owner=0 --group=0 -C "$f" -cf "$work/files.tar" .

# ---- containerd's image store, filled now so a new node starts without importing anything ----
log "importing the images into the node's containerd store"
cstate="$work/containerd-state"
mkdir -p "$cstate" "$work/store/var/lib/containerd"
cat > "$cstate/config.toml" <<EOF
version = 3
root = "$work/store/var/lib/containerd"
state = "$cstate/state"
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.cri.v1.images", "io.containerd.cri.v1.runtime",
  "io.containerd.podsandbox.controller.v1.podsandbox", "io.containerd.sandbox.controller.v1.shim", "io.containerd.nri.v1.nri",
  "io.containerd.internal.v1.tracing", "io.containerd.tracing.processor.v1.otlp"]
[grpc]
  address = "$cstate/containerd.sock"
[ttrpc]
  address = "$cstate/containerd.sock.ttrpc"
[debug]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "$cstate/opt"
EOF
"$ctrd/containerd" --config "$cstate/config.toml" > "$cstate/log" 2>&1 &
echo $! > "$cstate/pid"
for i in $(seq 1 100); do [[ -S "$cstate/containerd.sock" ]] && break; sleep 0.1; done
"$ctrd/ctr" -a "$cstate/containerd.sock" version >/dev/null || { cat "$cstate/log" >&2; die "containerd for the import did not start"; }
for img in "$work"/images/*.tar; do
  "$ctrd/ctr" -a "$cstate/containerd.sock" -n k8s.io images import --all-platforms --no-unpack --digests \
    --label=io.cri-containerd.pinned=pinned - < "$img" >&2
done
"$ctrd/ctr" -a "$cstate/containerd.sock" -n k8s.io images list -q >&2
kill "$(cat "$cstate/pid")"
for i in $(seq 1 100); do kill -0 "$(cat "$cstate/pid")" 2>/dev/null || break; sleep 0.1; done
rm -f "$cstate/pid"
# only the content store and its metadata go into the image
rm -rf "$work/store/var/lib/containerd/io.containerd.snapshotter.v1."* "$work/store/var/lib/containerd/tmpmounts"
tar --numeric-owner --owner=0 --group=0 -C "$work/store" -cf "$work/store.tar" .

# ---- the node image ----
log "writing the node image $name"
"$mk" --out "$work/node.tar" --name "$name" --layer "$("$here/rootfs.sh" node)" --layer "$work/files.tar" --layer "$work/store.tar" \
  --env container=docker --env "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
  --stop-signal 'SIGRTMIN+3' --entrypoint '["/usr/local/bin/entrypoint", "/sbin/init"]'
mv "$work/node.tar" "$archive"
# one node image archive is kept: the one of the current inputs
find "$cache_root/node-image" -maxdepth 1 -name 'node-*.tar' ! -path "$archive" -delete
podman load -q -i "$archive" >&2
# node images of earlier inputs go (one that a cluster still uses stays: podman refuses)
for old in $(podman images --format '{{.Repository}}:{{.Tag}}' | grep '^localhost/eventdb-kind/node:' | grep -vxF "$name" || true); do
  podman rmi "$old" >/dev/null 2>&1 || true
done
log "node image $name made in $(( $(date +%s) - t0 ))s"
echo "node-image $(( $(date +%s) - t0 ))" >> "$cache_root/build-times.txt"
echo "$name"
