#!/usr/bin/env bash
# Local Kubernetes control plane for EventDB tests, bound to 127.0.0.1 only.
#   cluster.sh up     build binaries if needed (cached), start etcd, kube-apiserver, kube-controller-manager,
#                     kube-scheduler and the local TypeScript kubelet; write .local/k8s/kubeconfig. Idempotent.
#   cluster.sh down   stop everything started by `up` (pods included), clean /etc/hosts, remove .local/k8s. Idempotent.
#   cluster.sh status print what runs.
# The kubelet is run from dist/ (make build first; the make targets do that).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"

state="${EVENTDB_K8S_STATE:-$repo/.local/k8s}"
api_port="${EVENTDB_K8S_API_PORT:-16443}"
etcd_port="${EVENTDB_K8S_ETCD_PORT:-23790}"
etcd_peer_port="${EVENTDB_K8S_ETCD_PEER_PORT:-23800}"
node_name="${EVENTDB_K8S_NODE_NAME:-eventdb-local}"
kubelet_port="${EVENTDB_K8S_KUBELET_PORT:-20250}"
# more than one Node (all served by the one local kubelet) lets required pod anti-affinity spread replicas
node_count="${EVENTDB_K8S_NODES:-3}"
service_cidr="10.96.0.0/16"
pids="$state/run"
logs="$state/logs"
pki="$state/pki"
# containers' writable layers (overlay upper dirs): outside the repository, which is the overlay's lower dir
scratch="${EVENTDB_K8S_SCRATCH:-/var/tmp/eventdb-k8s-$(echo -n "$state" | md5sum | cut -c1-10)}"

log() { echo "[k8s $(date -u +%H:%M:%S)] $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# pid_alive NAME: the pid recorded for NAME runs and is still the program we started.
pid_alive() {
  local f="$pids/$1.pid" pid exe
  [[ -f "$f" ]] || return 1
  pid="$(cat "$f")"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  [[ -d "/proc/$pid" ]] || return 1
  exe="$(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null || true)"
  [[ "$exe" == *"$(cat "$pids/$1.cmd" 2>/dev/null || echo __none__)"* ]]
}

# start NAME MATCH CMD...: run CMD detached (own session), log to logs/NAME.log, record its pid.
start() {
  local name="$1" match="$2"; shift 2
  if pid_alive "$name"; then log "$name already running (pid $(cat "$pids/$name.pid"))"; return 0; fi
  log "starting $name"
  echo "$match" > "$pids/$name.cmd"
  setsid "$@" >>"$logs/$name.log" 2>&1 < /dev/null &
  echo $! > "$pids/$name.pid"
}

# stop NAME [GRACE_SECONDS]: SIGTERM, wait, SIGKILL.
stop() {
  local name="$1" grace="${2:-15}" pid i
  if pid_alive "$name"; then
    pid="$(cat "$pids/$name.pid")"
    log "stopping $name (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < grace * 10; i++)); do
      [[ -d "/proc/$pid" ]] || break
      # a zombie (we are not its parent) counts as gone
      [[ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" == "Z" ]] && break
      sleep 0.1
    done
    if [[ -d "/proc/$pid" && "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != "Z" ]]; then
      log "killing $name (pid $pid)"; kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  rm -f "$pids/$name.pid" "$pids/$name.cmd"
}

wait_for() { # wait_for SECONDS DESCRIPTION CMD...
  local secs="$1" what="$2" i; shift 2
  for ((i = 0; i < secs * 4; i++)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.25
  done
  die "timed out after ${secs}s waiting for $what (logs in $logs)"
}

gen_pki() {
  [[ -f "$pki/.complete" ]] && return 0
  mkdir -p "$pki"
  log "generating PKI"
  (
    cd "$pki"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 3650 -subj "/CN=eventdb-local-ca" 2>/dev/null
    cat > apiserver.ext <<EOF
subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local
extendedKeyUsage=serverAuth
keyUsage=digitalSignature,keyEncipherment
EOF
    openssl req -newkey rsa:2048 -nodes -keyout apiserver.key -out apiserver.csr -subj "/CN=kube-apiserver" 2>/dev/null
    openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out apiserver.crt -days 3650 \
      -extfile apiserver.ext 2>/dev/null
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
    # client certificate for the admin (group system:masters), usable as an alternative to the token
    openssl req -newkey rsa:2048 -nodes -keyout admin.key -out admin.csr -subj "/O=system:masters/CN=eventdb-admin" 2>/dev/null
    printf 'extendedKeyUsage=clientAuth\n' > client.ext
    openssl x509 -req -in admin.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out admin.crt -days 3650 -extfile client.ext 2>/dev/null
    # static tokens: token,user,uid,"group1,group2"
    {
      echo "$(openssl rand -hex 24),eventdb-admin,eventdb-admin,\"system:masters\""
      echo "$(openssl rand -hex 24),system:kube-controller-manager,system:kube-controller-manager"
      echo "$(openssl rand -hex 24),system:kube-scheduler,system:kube-scheduler"
      echo "$(openssl rand -hex 24),system:node:$node_name,system:node:$node_name,\"system:nodes,system:masters\""
    } > tokens.csv
    chmod 600 ./*.key tokens.csv
  )
  touch "$pki/.complete"
}

token_of() { grep -F ",$1," "$pki/tokens.csv" | head -1 | cut -d, -f1; }

write_kubeconfig() { # write_kubeconfig FILE USER TOKEN
  local ca
  ca="$(base64 -w0 < "$pki/ca.crt")"
  cat > "$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: eventdb-local
  cluster:
    server: https://127.0.0.1:$api_port
    certificate-authority-data: $ca
users:
- name: $2
  user:
    token: $3
contexts:
- name: eventdb-local
  context:
    cluster: eventdb-local
    user: $2
    namespace: default
current-context: eventdb-local
EOF
  chmod 600 "$1"
}

api_ready() { curl -fsS --max-time 2 --cacert "$pki/ca.crt" -H "Authorization: Bearer $(token_of eventdb-admin)" \
  "https://127.0.0.1:$api_port/readyz" ; }

preflight() {
  [[ "$(id -u)" == 0 ]] || die "the local kubelet needs root (mount/UTS namespaces for pods, /etc/hosts for pod DNS)"
  unshare --mount --uts --propagation private true 2>/dev/null \
    || die "unshare --mount --uts does not work here (CAP_SYS_ADMIN needed for pod volume mounts)"
  local t
  t="$(mktemp -d)"
  mkdir -p "$t/l" "$t/u" "$t/w"
  if ! unshare --mount --propagation private mount -t overlay overlay -o "lowerdir=$t/l,upperdir=$t/u,workdir=$t/w" "$t/l" 2>/dev/null; then
    rm -rf "$t"; die "overlay mounts do not work here (containers see the repository through an overlay)"
  fi
  rm -rf "$t"
  [[ "$repo" != *[,:]* ]] || die "the repository path must not contain ',' or ':' (overlay lowerdir)"
  [[ -w /etc/hosts ]] || die "/etc/hosts is not writable (pod DNS records go there)"
  command -v openssl >/dev/null || die "openssl is needed for the control plane's PKI"
  command -v curl >/dev/null || die "curl is needed"
}

up() {
  local t0 bin
  t0=$(date +%s)
  preflight
  bin="$("$here/build.sh" | tail -1)"
  [[ -x "$bin/kube-apiserver" ]] || die "build did not produce binaries in $bin"
  mkdir -p "$state/bin" "$pids" "$logs"
  for b in kubectl helm; do ln -sfn "$bin/$b" "$state/bin/$b"; done
  [[ -f "$repo/dist/test/k8s/kubelet/main.js" ]] || die "dist/test/k8s/kubelet/main.js missing: run make build"
  gen_pki

  start etcd "$bin/etcd" "$bin/etcd" --name default --data-dir "$state/etcd" \
    --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$etcd_peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer_port" \
    --initial-cluster "default=http://127.0.0.1:$etcd_peer_port" \
    --unsafe-no-fsync --quota-backend-bytes 2147483648 --log-level warn
  wait_for 30 "etcd" curl -fsS --max-time 1 "http://127.0.0.1:$etcd_port/health"

  start kube-apiserver "$bin/kube-apiserver" "$bin/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$etcd_port" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$api_port" \
    --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
    --client-ca-file "$pki/ca.crt" --token-auth-file "$pki/tokens.csv" \
    --authorization-mode RBAC --anonymous-auth=false \
    --service-cluster-ip-range "$service_cidr" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
    --allow-privileged=true --cert-dir "$state/apiserver-certs" --profiling=false \
    --endpoint-reconciler-type lease --kubelet-preferred-address-types InternalIP --v 1
  wait_for 90 "kube-apiserver /readyz" api_ready

  write_kubeconfig "$state/kubeconfig" eventdb-admin "$(token_of eventdb-admin)"
  write_kubeconfig "$state/controller-manager.kubeconfig" system:kube-controller-manager "$(token_of system:kube-controller-manager)"
  write_kubeconfig "$state/scheduler.kubeconfig" system:kube-scheduler "$(token_of system:kube-scheduler)"
  write_kubeconfig "$state/kubelet.kubeconfig" "system:node:$node_name" "$(token_of "system:node:$node_name")"

  start kube-controller-manager "$bin/kube-controller-manager" "$bin/kube-controller-manager" \
    --kubeconfig "$state/controller-manager.kubeconfig" \
    --authentication-kubeconfig "$state/controller-manager.kubeconfig" \
    --authorization-kubeconfig "$state/controller-manager.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port 0 --leader-elect=false \
    --use-service-account-credentials=true \
    --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" \
    --service-cluster-ip-range "$service_cidr" --cluster-name eventdb-local \
    --concurrent-statefulset-syncs 5 --concurrent-gc-syncs 10 --v 1
  start kube-scheduler "$bin/kube-scheduler" "$bin/kube-scheduler" \
    --kubeconfig "$state/scheduler.kubeconfig" \
    --authentication-kubeconfig "$state/scheduler.kubeconfig" \
    --authorization-kubeconfig "$state/scheduler.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port 0 --leader-elect=false --v 1
  mkdir -p "$state/kubelet"
  start kubelet "$repo/dist/test/k8s/kubelet/main.js" node "$repo/dist/test/k8s/kubelet/main.js" \
    --kubeconfig "$state/kubelet.kubeconfig" --state-dir "$state/kubelet" --node-name "$node_name" --repo "$repo" \
    --server-port "$kubelet_port" --tls-cert "$pki/apiserver.crt" --tls-key "$pki/apiserver.key" \
    --scratch-dir "$scratch" --nodes "$node_count"

  local kubectl=("$state/bin/kubectl" --kubeconfig "$state/kubeconfig")
  wait_for 60 "node $node_name Ready" "${kubectl[@]}" wait --for=condition=Ready "node/$node_name" --timeout=2s
  local i
  for ((i = 2; i <= node_count; i++)); do
    wait_for 30 "node $node_name-$i Ready" "${kubectl[@]}" wait --for=condition=Ready "node/$node_name-$i" --timeout=2s
  done
  wait_for 60 "service account default/default" "${kubectl[@]}" get serviceaccount default -n default
  for name in kube-controller-manager kube-scheduler kubelet; do
    pid_alive "$name" || die "$name exited (see $logs/$name.log)"
  done
  log "control plane up in $(( $(date +%s) - t0 ))s: export KUBECONFIG=$state/kubeconfig; PATH=$state/bin:\$PATH"
}

clean_hosts() {
  if grep -q '# BEGIN eventdb-local-kubelet' /etc/hosts 2>/dev/null; then
    local tmp
    tmp="$(sed '/# BEGIN eventdb-local-kubelet/,/# END eventdb-local-kubelet/d' /etc/hosts)"
    # rewrite in place (no rename: /etc/hosts may be a bind mount)
    printf '%s\n' "$tmp" > /etc/hosts
  fi
}

down() {
  if [[ -d "$pids" ]]; then
    stop kubelet 60
    stop kube-scheduler
    stop kube-controller-manager
    stop kube-apiserver
    stop etcd
  fi
  # container processes that outlived the kubelet (e.g. it was SIGKILLed): recorded per pod by the kubelet
  if [[ -d "$state/kubelet/pods" ]]; then
    local f pid
    while IFS= read -r f; do
      pid="$(cat "$f" 2>/dev/null || true)"
      if [[ "$pid" =~ ^[0-9]+$ ]] && [[ -d "/proc/$pid" ]] && grep -qa "EVENTDB_K8S_STATE=$state" "/proc/$pid/environ" 2>/dev/null; then
        log "killing leftover container process $pid"
        kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
      fi
    done < <(find "$state/kubelet/pods" -name '*.pid' 2>/dev/null)
  fi
  # volume mount points the kubelet created on the host (removed only if empty)
  if [[ -f "$state/kubelet/created-dirs" ]]; then
    local d
    while IFS= read -r d; do
      [[ -n "$d" ]] || continue
      if [[ -d "$d" ]]; then rmdir "$d" 2>/dev/null || true; elif [[ -f "$d" && ! -s "$d" ]]; then rm -f "$d"; fi
    done < <(sort -r "$state/kubelet/created-dirs")
  fi
  clean_hosts
  rm -rf "$state" "$scratch"
  log "control plane down"
}

status() {
  for name in etcd kube-apiserver kube-controller-manager kube-scheduler kubelet; do
    if pid_alive "$name"; then echo "$name running (pid $(cat "$pids/$name.pid"))"; else echo "$name stopped"; fi
  done
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status ;;
  *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
