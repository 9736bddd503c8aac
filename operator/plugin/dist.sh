#!/bin/sh
# `make plugin-dist`: the release archive of kubectl-eventdb and its krew manifest, filled in.
#   .local/plugin-dist/kubectl-eventdb-v<version>.tar.gz   operator/bin/kubectl-eventdb, the compiled
#       dist/operator/src and dist/node/src it runs, package.json, and node_modules of the runtime
#       dependencies (package-lock.json entries not marked dev; none is platform-specific: the archive
#       runs on any os with Node.js 20+)
#   .local/plugin-dist/eventdb.yaml   operator/plugin/krew/eventdb.yaml.in with the version, the
#       archive's URI and its sha256
# The archive is reproducible: sorted names, mtime 0, owner 0, gzip without name or time, so the
# same commit and the same node_modules give the same sha256 on every machine.
# PLUGIN_RELEASE_URL: the directory URL the release uploads the archive to (the manifest's uri is
# $PLUGIN_RELEASE_URL/<archive>); unset, the uri is the local file (for `kubectl krew install
# --manifest=... --archive=...`). SKIP_BUILD=1 uses dist/ as it is.
set -eu
repo="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$repo"
version="v$(node -p 'require("./package.json").version')"
out="${PLUGIN_DIST_DIR:-$repo/.local/plugin-dist}"
archive="kubectl-eventdb-$version.tar.gz"
[ "${SKIP_BUILD:-}" = 1 ] || npx tsc -p tsconfig.json
[ -f dist/operator/src/plugin/main.js ] || { echo "plugin-dist: dist/operator/src/plugin/main.js is missing (build first)" >&2; exit 1; }
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/operator/bin" "$stage/dist/operator" "$stage/dist/node" "$stage/node_modules" "$out"
cp operator/bin/kubectl-eventdb "$stage/operator/bin/"
cp -R dist/operator/src "$stage/dist/operator/src"
cp -R dist/node/src "$stage/dist/node/src"
find "$stage/dist" \( -name '*.test.js' -o -name '*.test.js.map' -o -name '*.test.d.ts' \) -delete
cp package.json "$stage/"
# The runtime dependencies: every top-level package of the lock that is not dev-only (nested ones
# travel inside their parent's directory).
node -e '
  const lock = require("./package-lock.json");
  for (const [key, entry] of Object.entries(lock.packages))
    if (key.startsWith("node_modules/") && key.split("node_modules/").length === 2 && !entry.dev && !entry.devOptional) console.log(key);
' | while read -r dir; do
  mkdir -p "$stage/$(dirname "$dir")"
  cp -R "$dir" "$stage/$dir"
done
rm -rf "$stage/node_modules/.bin"
tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --mode='u+rwX,go+rX,go-w' --format=gnu -C "$stage" -cf - . | gzip -n -9 > "$out/$archive"
sha256="$(sha256sum "$out/$archive" | cut -d' ' -f1)"
uri="${PLUGIN_RELEASE_URL:+${PLUGIN_RELEASE_URL%/}/$archive}"
uri="${uri:-file://$out/$archive}"
sed -e "s|@VERSION@|$version|g" -e "s|@URI@|$uri|g" -e "s|@SHA256@|$sha256|g" operator/plugin/krew/eventdb.yaml.in > "$out/eventdb.yaml"
echo "$out/$archive  sha256 $sha256  ($(du -h "$out/$archive" | cut -f1))"
echo "$out/eventdb.yaml  uri $uri"
