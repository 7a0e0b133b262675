#!/usr/bin/env bash
# A local Kubernetes cluster for end-to-end tests, on loopback only: etcd,
# kube-apiserver, kube-controller-manager, kube-scheduler, kwok (fake nodes and
# pods) and Karpenter running its kwok cloud provider. Every process is started
# from the binaries test/world/testbin.sh builds, records its PID in the run
# directory, and is stopped by that PID.
#
# Usage: test/world/cluster.sh up|down|status|kubeconfig|audit-log
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
run=${NRC_CLUSTER_DIR:-${TMPDIR:-/tmp}/node-rotation-controller/cluster}
pki="$run/pki" pids="$run/pids" logs="$run/logs"
kubeconfig="$run/admin.kubeconfig"

ETCD_PORT=${ETCD_PORT:-23790}
ETCD_PEER_PORT=${ETCD_PEER_PORT:-23800}
APISERVER_PORT=${APISERVER_PORT:-16443}
KCM_PORT=${KCM_PORT:-10357}
SCHEDULER_PORT=${SCHEDULER_PORT:-10359}
KWOK_PORT=${KWOK_PORT:-10347}
KARPENTER_METRICS_PORT=${KARPENTER_METRICS_PORT:-18080}
KARPENTER_HEALTH_PORT=${KARPENTER_HEALTH_PORT:-18081}
# Node boot delay: kwok marks a node Ready this long after it appears, so
# Karpenter sees a node that is launched but not yet ready, as in a cloud.
NODE_BOOT_DELAY_MS=${NODE_BOOT_DELAY_MS:-0}
# Node status heartbeat: kwok rewrites a Ready node's status this long
# after its last write, plus a 1/60 of it at most of jitter (0: kwok's
# default, 600 s plus up to 10 s). Its leases keep the nodes healthy
# whatever this is.
NODE_HEARTBEAT_DELAY_MS=${NODE_HEARTBEAT_DELAY_MS:-0}
# An image kwok never reports pulled in a container (stage_files); the
# same as test/fixtures' SlowPullImage.
SLOW_PULL_IMAGE=registry.e2e.invalid/slow-pull:1
# The Karpenter version to run (its kwok provider and its CRDs); testbin.sh
# builds it when missing. The default is the one go.mod builds against.
KARPENTER_VERSION=${KARPENTER_VERSION:-1.15.0}
# The Kubernetes version of the control plane (kube-apiserver,
# kube-controller-manager, kube-scheduler): empty, the test world's shared
# one (testbin.sh's K8S_VERSION); else that version's, which testbin.sh
# builds beside it when missing (the Kubernetes matrix). etcd, kwok and
# kubectl stay the shared ones.
CONTROL_PLANE_VERSION=${CONTROL_PLANE_VERSION:-}

# Order matters: up starts in this order, down stops in reverse.
components=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok karpenter)

log() { printf '[cluster %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

alive() { local f="$pids/$1"; [ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null; }

# start NAME CMD...: runs CMD in its own session, logs to logs/NAME.log.
start() {
  local name=$1; shift
  setsid "$@" >"$logs/$name.log" 2>&1 </dev/null &
  echo $! >"$pids/$name"
  log "$name started (pid $!, log $logs/$name.log)"
}

# wait_for WHAT SECONDS CMD...: polls CMD until it succeeds.
wait_for() {
  local what=$1 secs=$2; shift 2
  local deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || die "$what not ready after ${secs}s (see $logs)"
    for c in "${components[@]}"; do
      if [ -f "$pids/$c" ] && ! alive "$c"; then die "$c exited; last lines of its log:
$(tail -n 20 "$logs/$c.log")"; fi
    done
    sleep 0.5
  done
  log "$what ready"
}

ensure_tools() {
  local missing=()
  for t in openssl curl setsid; do command -v "$t" >/dev/null || missing+=("$t"); done
  [ ${#missing[@]} -eq 0 ] && return
  log "installing ${missing[*]} with apt-get"
  apt-get update -qq && apt-get install -y -qq openssl curl util-linux >/dev/null
}

make_pki() {
  [ -f "$pki/admin.crt" ] && return
  mkdir -p "$pki"
  log "generating a throwaway CA, serving, admin and service-account keys in $pki"
  (
    cd "$pki"
    openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=nrc-test-ca" -keyout ca.key -out ca.crt 2>/dev/null
    cat >serving.ext <<EXT
subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc
extendedKeyUsage=serverAuth
EXT
    openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" -keyout serving.key -out serving.csr 2>/dev/null
    openssl x509 -req -in serving.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 30 -extfile serving.ext -out serving.crt 2>/dev/null
    echo "extendedKeyUsage=clientAuth" >client.ext
    openssl req -newkey rsa:2048 -nodes -subj "/CN=nrc-admin/O=system:masters" -keyout admin.key -out admin.csr 2>/dev/null
    openssl x509 -req -in admin.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 30 -extfile client.ext -out admin.crt 2>/dev/null
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
  )
}

write_kubeconfig() {
  cat >"$kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: nrc
  cluster:
    server: https://127.0.0.1:$APISERVER_PORT
    certificate-authority: $pki/ca.crt
users:
- name: nrc-admin
  user:
    client-certificate: $pki/admin.crt
    client-key: $pki/admin.key
contexts:
- name: nrc
  context: {cluster: nrc, user: nrc-admin}
current-context: nrc
KC
}

# write_audit_policy: the API server records, one JSON line each, every
# request made by a ServiceAccount (metadata only, once answered), so a suite
# that runs the controller under a ServiceAccount's token can read back each
# verb it used and each answer, 403s included. Other users are not recorded:
# the kubelets of kwok and the admin would only make the log large.
write_audit_policy() {
  cat >"$run/audit-policy.yaml" <<'AP'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  userGroups: ["system:serviceaccounts"]
- level: None
AP
}

apiserver_ready() {
  curl -sf --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" \
    "https://127.0.0.1:$APISERVER_PORT/readyz" | grep -q ok
}

install_crds() {
  # the CRDs of the Karpenter that runs (testbin.sh keeps its module copy)
  local kdir
  kdir="$(dirname "$bin")/work/karpenter-$KARPENTER_VERSION"
  [ -d "$kdir/pkg/apis/crds" ] || die "no Karpenter $KARPENTER_VERSION source at $kdir: run test/world/testbin.sh karpenter $KARPENTER_VERSION"
  log "installing Karpenter $KARPENTER_VERSION CRDs from $kdir"
  "$bin/kubectl" --kubeconfig "$kubeconfig" apply --server-side \
    -f "$kdir/pkg/apis/crds/" -f "$kdir/kwok/apis/crds/" >/dev/null
  "$bin/kubectl" --kubeconfig "$kubeconfig" wait --for condition=Established --timeout=60s \
    crd/nodepools.karpenter.sh crd/nodeclaims.karpenter.sh crd/kwoknodeclasses.karpenter.kwok.sh >/dev/null
  "$bin/kubectl" --kubeconfig "$kubeconfig" apply -f - >/dev/null <<NC
apiVersion: karpenter.kwok.sh/v1alpha1
kind: KWOKNodeClass
metadata:
  name: default
NC
}

# stage_files copies kwok's stages into the run directory, giving the
# node-initialize stage the node boot delay and the node heartbeat stage
# its delay.
stage_files() {
  rm -rf "$run/stages" && mkdir -p "$run/stages" && cp "$1"/*.yaml "$run/stages/"
  if [ "$NODE_BOOT_DELAY_MS" -gt 0 ]; then
    sed -i "0,/^spec:/s//spec:\n  delay:\n    durationMilliseconds: $NODE_BOOT_DELAY_MS/" "$run/stages/node-initialize.yaml"
    log "kwok node boot delay: ${NODE_BOOT_DELAY_MS}ms"
  fi
  # An image whose pull never ends (test/fixtures SlowPullImage): pod-ready
  # passes over a Pod that runs it in a container, so the e2e's pre-pull
  # Pod for it stays Pending and its phase runs to prePull.timeout; the
  # workload that has it as an init container starts as usual.
  local ready="$run/stages/pod-ready.yaml"
  grep -q '^    matchExpressions:$' "$ready" || { log "no matchExpressions in $ready"; return 1; }
  sed -i "0,/^    matchExpressions:\$/s||    matchExpressions:\n    - key: '.spec.containers.[].image'\n      operator: 'NotIn'\n      values:\n      - '$SLOW_PULL_IMAGE'|" "$ready"
  if [ "$NODE_HEARTBEAT_DELAY_MS" -gt 0 ]; then
    local hb="$run/stages/node-heartbeat-with-lease.yaml"
    grep -q '^    durationMilliseconds: ' "$hb" && grep -q '^    jitterDurationMilliseconds: ' "$hb" ||
      { log "no delay to set in $hb"; return 1; }
    sed -i -e "s/^    durationMilliseconds: .*/    durationMilliseconds: $NODE_HEARTBEAT_DELAY_MS/" \
      -e "s/^    jitterDurationMilliseconds: .*/    jitterDurationMilliseconds: $((NODE_HEARTBEAT_DELAY_MS + NODE_HEARTBEAT_DELAY_MS / 60))/" "$hb"
    log "kwok node status heartbeat: every ${NODE_HEARTBEAT_DELAY_MS}ms plus jitter"
  fi
}

up() {
  ensure_tools
  "$here/testbin.sh" cluster
  "$here/testbin.sh" karpenter "$KARPENTER_VERSION"
  local cp=""
  if [ -n "$CONTROL_PLANE_VERSION" ]; then
    "$here/testbin.sh" kubernetes "$CONTROL_PLANE_VERSION"
    cp="-$CONTROL_PLANE_VERSION"
  fi
  bin=$("$here/testbin.sh" path)
  stages=$(dirname "$bin")/kwok-stages
  local versions="Karpenter $KARPENTER_VERSION, control plane ${CONTROL_PLANE_VERSION:-shared}"
  if alive kube-apiserver; then
    # a running cluster is reused only if it runs the versions asked for
    local running
    running=$(cat "$run/versions" 2>/dev/null || echo unknown)
    [ "$running" = "$versions" ] || die "a cluster running $running is up in $run; bring it down first (cluster.sh down)"
    log "already running; kubeconfig: $kubeconfig"; echo "$kubeconfig"; return
  fi
  local t0=$SECONDS
  mkdir -p "$pids" "$logs"
  rm -f "$logs/audit.log"
  echo "$versions" >"$run/versions"
  make_pki
  write_kubeconfig

  start etcd "$bin/etcd" --name=nrc --data-dir="$run/etcd" --unsafe-no-fsync \
    --listen-client-urls="http://127.0.0.1:$ETCD_PORT" --advertise-client-urls="http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster="nrc=http://127.0.0.1:$ETCD_PEER_PORT"
  wait_for etcd 60 curl -sf "http://127.0.0.1:$ETCD_PORT/health"

  write_audit_policy
  # --endpoint-reconciler-type=none: a 127.0.0.1 advertise address is
  # rejected for the kubernetes Endpoints object.
  start kube-apiserver "$bin/kube-apiserver$cp" --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
    --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$APISERVER_PORT" \
    --tls-cert-file="$pki/serving.crt" --tls-private-key-file="$pki/serving.key" --client-ca-file="$pki/ca.crt" \
    --service-account-key-file="$pki/sa.pub" --service-account-signing-key-file="$pki/sa.key" \
    --service-account-issuer=https://kubernetes.default.svc --service-cluster-ip-range=10.96.0.0/24 \
    --authorization-mode=Node,RBAC --endpoint-reconciler-type=none --allow-privileged=true \
    --audit-policy-file="$run/audit-policy.yaml" --audit-log-path="$logs/audit.log" --audit-log-format=json
  wait_for kube-apiserver 120 apiserver_ready
  # the control plane asked for, or a matrix row would name a version it did not run
  local want served
  want=v${CONTROL_PLANE_VERSION:-$("$here/testbin.sh" kube-version)}
  served=$(curl -sf --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" \
    "https://127.0.0.1:$APISERVER_PORT/version" | sed -n 's/.*"gitVersion": *"\([^"]*\)".*/\1/p')
  [ "$served" = "$want" ] || die "kube-apiserver serves version ${served:-unknown}, not $want"
  log "kube-apiserver $served"

  local common=(--kubeconfig="$kubeconfig" --authentication-kubeconfig="$kubeconfig"
    --authorization-kubeconfig="$kubeconfig" --bind-address=127.0.0.1 --leader-elect=false)
  start kube-controller-manager "$bin/kube-controller-manager$cp" "${common[@]}" --secure-port="$KCM_PORT" \
    --use-service-account-credentials --service-account-private-key-file="$pki/sa.key" \
    --root-ca-file="$pki/ca.crt" --controllers='*'
  start kube-scheduler "$bin/kube-scheduler$cp" "${common[@]}" --secure-port="$SCHEDULER_PORT"

  install_crds

  stage_files "$stages"
  start kwok "$bin/kwok" --kubeconfig="$kubeconfig" --manage-all-nodes=false \
    --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
    --server-address="127.0.0.1:$KWOK_PORT" --node-ip=127.0.0.1 --node-lease-duration-seconds=40 \
    $(for f in "$run"/stages/*.yaml; do printf -- '--config=%s ' "$f"; done)

  # DISABLE_WEBHOOK: the v1.0 line still serves conversion webhooks (on
  # :8443, every interface) and is not ready until their certificate
  # Secret exists; the CRDs it installs name no webhook, so nothing calls
  # them. Later lines have no webhook and ignore the variable.
  start karpenter env KUBECONFIG="$kubeconfig" DISABLE_LEADER_ELECTION=true SYSTEM_NAMESPACE=kube-system \
    METRICS_PORT="$KARPENTER_METRICS_PORT" HEALTH_PROBE_PORT="$KARPENTER_HEALTH_PORT" DISABLE_WEBHOOK=true \
    BATCH_IDLE_DURATION=1s BATCH_MAX_DURATION=5s LOG_LEVEL=info "$bin/karpenter-kwok-$KARPENTER_VERSION"
  wait_for karpenter 120 curl -sf "http://127.0.0.1:$KARPENTER_HEALTH_PORT/readyz"

  log "cluster up in $((SECONDS - t0))s"
  log "kubeconfig: $kubeconfig"
  echo "$kubeconfig"
}

down() {
  local i
  for ((i = ${#components[@]} - 1; i >= 0; i--)); do
    local c=${components[$i]} f="$pids/${components[$i]}"
    [ -f "$f" ] || continue
    local pid
    pid=$(cat "$f")
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
      kill -0 "$pid" 2>/dev/null && { log "$c (pid $pid) ignored SIGTERM; killing"; kill -9 "$pid" 2>/dev/null || true; }
      log "$c stopped (pid $pid)"
    fi
    rm -f "$f"
  done
  rm -rf "$run/etcd"
  log "cluster down (logs kept in $logs)"
}

status() {
  for c in "${components[@]}"; do
    if alive "$c"; then echo "$c running (pid $(cat "$pids/$c"))"; else echo "$c stopped"; fi
  done
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status ;;
  kubeconfig) echo "$kubeconfig" ;;
  audit-log) echo "$logs/audit.log" ;;
  *) echo "usage: $0 up|down|status|kubeconfig|audit-log" >&2; exit 2 ;;
esac
