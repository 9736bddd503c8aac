#!/usr/bin/env bash
# Installs the official Python client of KurrentDB (kurrentdbclient, from PyPI, with grpcio) into a
# virtual environment cached by version outside the checkout:
#   ${EVENTDB_PY_CACHE:-~/.cache/eventdb-py}/kurrentdbclient-<version>/   (marker .complete)
# Prints the environment's python. test/support/python-client.ts names the same path and version.
set -euo pipefail
version="$(sed -n "s/^export const PYTHON_CLIENT_VERSION = '\(.*\)';$/\1/p" "$(dirname "$0")/python-client.ts")"
[[ -n "$version" ]] || { echo "python-client.sh: no PYTHON_CLIENT_VERSION in python-client.ts" >&2; exit 1; }
root="${EVENTDB_PY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/eventdb-py}"
dir="$root/kurrentdbclient-$version"
if [[ ! -f "$dir/.complete" ]]; then
  command -v python3 >/dev/null || { echo "python-client.sh: python3 is missing" >&2; exit 1; }
  rm -rf "$dir"
  mkdir -p "$root"
  python3 -m venv "$dir"
  "$dir/bin/pip" install --quiet --disable-pip-version-check "kurrentdbclient==$version" >&2
  touch "$dir/.complete"
fi
echo "$dir/bin/python"
