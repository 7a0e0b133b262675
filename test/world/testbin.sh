#!/usr/bin/env bash
# Builds the binaries of the test world (etcd, the Kubernetes control plane,
# kubectl, kwok and Karpenter's kwok provider) from Go modules into a cache
# outside the repository. Nothing here downloads a prebuilt binary: everything
# comes through the Go module proxy and is compiled on this machine.
#
# Usage: test/world/testbin.sh [envtest|cluster|all|path|kube-version|karpenter VERSION...|kubernetes VERSION...]
#   envtest    etcd + kube-apiserver (what `make test` needs)
#   cluster    everything the local e2e cluster needs, with Karpenter's kwok
#              provider at KARPENTER_VERSION (default: all)
#   karpenter  Karpenter's kwok provider at each VERSION (the version matrix)
#   kubernetes the control plane of Kubernetes VERSION, as kube-apiserver-VERSION,
#              kube-controller-manager-VERSION and kube-scheduler-VERSION (the
#              Kubernetes matrix; cluster.sh's CONTROL_PLANE_VERSION)
#   path       print the bin directory and exit
#   kube-version print the shared control plane's Kubernetes version and exit
#
# The cache is keyed by the shared versions (Kubernetes, etcd, kwok) and every
# binary carries a version stamp, so a second run (or another checkout on the
# same machine) reuses what is there. Each Karpenter version is one more
# binary, karpenter-kwok-VERSION, beside the shared ones: the control plane is
# built once, whatever the number of Karpenter versions. A Kubernetes matrix
# version is three more, its control plane, beside them too.
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-1.37.2}
ETCD_VERSION=${ETCD_VERSION:-3.6.16}
KWOK_VERSION=${KWOK_VERSION:-0.8.0}
# the default Karpenter: what go.mod builds against and every suite runs on
KARPENTER_VERSION=${KARPENTER_VERSION:-1.15.0}
# what a Kubernetes matrix version builds: its control plane; etcd, kwok and
# kubectl stay the shared ones
CONTROL_PLANE=(kube-apiserver kube-controller-manager kube-scheduler)

key="k8s-${K8S_VERSION}_etcd-${ETCD_VERSION}_kwok-${KWOK_VERSION}"
root=${NRC_TESTBIN_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/node-rotation-controller/$key}
bin="$root/bin"
work="$root/work"
mkdir -p "$bin" "$work"

export GOFLAGS="-mod=mod -buildvcs=false"
export CGO_ENABLED=0
# Each binary is built by the machine's own Go (its cache stamps carry no
# toolchain), except a module whose go.mod asks for a newer one: then by
# NEWER_TOOLCHAIN, the one approved way to a newer Go (the go command fetches
# it from the Go module proxy). Karpenter v1.14.3 and v1.15 are such modules.
NEWER_TOOLCHAIN=go1.27.3
export GOTOOLCHAIN=local

log() { printf '[testbin %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# fresh NAME VERSION: true when $bin/NAME exists with a matching stamp.
fresh() { [ -x "$bin/$1" ] && [ "$(cat "$bin/.$1.version" 2>/dev/null)" = "$2" ]; }
stamp() { echo "$2" > "$bin/.$1.version"; }

# toolchain DIR: the GOTOOLCHAIN that builds the main module in DIR — local,
# or NEWER_TOOLCHAIN when its go line asks for more than the local Go.
toolchain() {
  local want have
  want=$(sed -n 's/^go \([0-9.]*\).*/\1/p' "$1/go.mod")
  have=$(cd "$work" && GOTOOLCHAIN=local go env GOVERSION | sed 's/^go//')
  if [ "$(printf '%s\n%s\n' "$want" "$have" | sort -V | tail -n 1)" = "$have" ]; then echo local; else echo "$NEWER_TOOLCHAIN"; fi
}

# locked UNIT CMD...: CMD holding UNIT's lock, so two testbin.sh runs at
# once (make test-all's early builds beside make test's own) never build
# one binary or write one work directory together: the second waits, then
# finds the binary cached. Every step under a lock can be killed halfway
# and redone (a marker file ends each), as test-all kills its early builds.
locked() {
  local unit=$1; shift
  (
    flock -n 9 || { log "$unit: another testbin.sh run is building it; waiting"; flock 9 || exit 1; }
    "$@"
  ) 9>"$work/.lock-$unit"
}

# GCFLAGS: the compiler flags of a build. The matrix versions' binaries
# (a Karpenter version's kwok provider, a Kubernetes version's control
# plane besides the shared one) are built without optimizations or
# inlining (-N -l): the same program, a quarter less to compile on a cold
# machine (a kwok provider: 153 s against 199 s, docs/test-world.md "CI
# time"), run only by one short matrix job each. The shared binaries every
# suite runs are built optimized.
UNOPTIMIZED="all=-N -l"

# gobuild NAME VERSION DIR PKG [LDFLAGS [GCFLAGS]]: one go build at a time, niced.
gobuild() {
  local name=$1 version=$2 dir=$3 pkg=$4 ldflags=${5:-} gcflags=${6:-}
  if fresh "$name" "$version"; then log "$name $version: cached"; return; fi
  local tc
  tc=$(toolchain "$dir")
  log "$name $version: building $pkg with Go $tc${gcflags:+, gcflags $gcflags} (this can take minutes on a cold cache)"
  local t0=$SECONDS
  (cd "$dir" && GOTOOLCHAIN=$tc nice -n 10 go build -trimpath -gcflags "$gcflags" -ldflags "-s -w $ldflags" -o "$bin/$name.tmp" "$pkg")
  mv "$bin/$name.tmp" "$bin/$name"
  stamp "$name" "$version"
  log "$name $version: built in $((SECONDS - t0))s"
}

etcd() {
  fresh etcd "$ETCD_VERSION" && fresh etcdctl "$ETCD_VERSION" && { log "etcd $ETCD_VERSION: cached"; return; }
  # `go install etcd@version` is refused (replace directives in its go.mod), so
  # a throwaway main module requires the server and etcdctl modules instead.
  local d="$work/etcd-$ETCD_VERSION"
  mkdir -p "$d"
  if [ ! -f "$d/.ready" ]; then
    (cd "$d" && rm -f go.mod go.sum && go mod init testbin/etcd >/dev/null 2>&1 &&
      go get "go.etcd.io/etcd/server/v3@v$ETCD_VERSION" "go.etcd.io/etcd/etcdctl/v3@v$ETCD_VERSION" >/dev/null 2>&1)
    touch "$d/.ready"
  fi
  gobuild etcd "$ETCD_VERSION" "$d" go.etcd.io/etcd/server/v3
  gobuild etcdctl "$ETCD_VERSION" "$d" go.etcd.io/etcd/etcdctl/v3
}

# kube_module VERSION: a throwaway main module requiring k8s.io/kubernetes
# at VERSION with every staging module it replaces locally pinned to the
# published v0.x of the same minor.
kube_module() {
  local v=$1 d="$work/kubernetes-$1"
  if [ -f "$d/.ready" ]; then echo "$d"; return; fi
  mkdir -p "$d"
  local modfile
  modfile=$(cd "$d" && GOTOOLCHAIN=$NEWER_TOOLCHAIN go mod download -json "k8s.io/kubernetes@v$v" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  [ -n "$modfile" ] || { log "kubernetes $v: the Go module proxy did not give k8s.io/kubernetes@v$v"; exit 1; }
  {
    echo "module testbin/kubernetes"
    echo
    grep -E '^(go|godebug) ' "$modfile"
    echo
    echo "require k8s.io/kubernetes v$v"
    echo
    echo "replace ("
    sed -n '/^replace (/,/^)/p' "$modfile" | grep -oE 'k8s.io/[a-z0-9-]+ =>' | sed 's/ =>//' |
      while read -r m; do echo "	$m => $m v0.${v#1.}"; done
    echo ")"
  } > "$d/go.mod"
  (cd "$d" && GOTOOLCHAIN=$(toolchain "$d") go mod download k8s.io/kubernetes >/dev/null 2>&1 || true)
  touch "$d/.ready"
  echo "$d"
}

# kube VERSION SUFFIX BIN...: builds each command BIN of Kubernetes VERSION
# as BIN SUFFIX — the shared control plane with no suffix, a Kubernetes
# matrix version's beside it as BIN-VERSION.
kube() {
  local v=$1 suffix=$2; shift 2
  local want=("$@") missing=()
  for b in "${want[@]}"; do fresh "$b$suffix" "$v" || missing+=("$b"); done
  if [ ${#missing[@]} -eq 0 ]; then log "${want[*]} $v: cached"; return; fi
  local d minor=${v#1.} gc=""
  [ -z "$suffix" ] || gc=$UNOPTIMIZED
  d=$(kube_module "$v")
  minor=${minor%%.*}
  local ld=""
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld+=" -X $p.gitVersion=v$v -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
  done
  for b in "${missing[@]}"; do
    gobuild "$b$suffix" "$v" "$d" "k8s.io/kubernetes/cmd/$b" "$ld" "$gc"
  done
}

kwok() {
  local d="$work/kwok-$KWOK_VERSION"
  mkdir -p "$d"
  if [ ! -f "$d/.ready" ]; then
    (cd "$d" && rm -f go.mod go.sum && go mod init testbin/kwok >/dev/null 2>&1 && go get "sigs.k8s.io/kwok@v$KWOK_VERSION" >/dev/null 2>&1)
    touch "$d/.ready"
  fi
  gobuild kwok "$KWOK_VERSION" "$d" sigs.k8s.io/kwok/cmd/kwok
  # The Stage definitions that make fake nodes and pods behave (ready,
  # heartbeat, completion, deletion) ship inside the module.
  local src
  src=$(cd "$d" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
  # Node: initialize + heartbeat with a Lease; pods: ready, complete, and
  # delete (without pod-delete, evicted pods hang in Terminating).
  mkdir -p "$root/kwok-stages"
  for s in node/fast/node-initialize node/heartbeat-with-lease/node-heartbeat-with-lease \
           pod/fast/pod-ready pod/fast/pod-complete pod/fast/pod-delete; do
    # only when it differs: a cluster starting meanwhile may be copying it
    cmp -s "$src/kustomize/stage/$s.yaml" "$root/kwok-stages/${s##*/}.yaml" ||
      install -m 0644 "$src/kustomize/stage/$s.yaml" "$root/kwok-stages/${s##*/}.yaml"
  done
}

# karpenter VERSION: builds karpenter-kwok-VERSION; its CRDs stay in
# $work/karpenter-VERSION (cluster.sh installs the ones of the version it runs).
karpenter() {
  local v=$1
  fresh "karpenter-kwok-$v" "$v-loopback" && { log "karpenter-kwok $v: cached"; return; }
  # Karpenter binds its metrics and health listeners to ":port" with no host
  # option; a copy of the module whose operator binds 127.0.0.1 keeps every
  # listener of the test world on loopback.
  local d="$work/karpenter-$v"
  if [ ! -f "$d/.patched" ]; then
    local src
    # (the newer Go: the local one refuses to download a module whose go
    # line asks for more than it is)
    src=$(cd "$work" && GOTOOLCHAIN=$NEWER_TOOLCHAIN go mod download -json "sigs.k8s.io/karpenter@v$v" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
    [ -n "$src" ] || { log "karpenter $v: the Go module proxy did not give sigs.k8s.io/karpenter@v$v"; exit 1; }
    rm -rf "$d" && cp -r "$src" "$d" && chmod -R u+w "$d"
    local n
    n=$(grep -c 'fmt.Sprintf(":%d"' "$d/pkg/operator/operator.go" || true)
    [ "$n" = 2 ] || { log "karpenter: expected 2 listener formats in operator.go, found $n"; exit 1; }
    sed -i 's/fmt.Sprintf(":%d"/fmt.Sprintf("127.0.0.1:%d"/g' "$d/pkg/operator/operator.go"
    touch "$d/.patched"
  fi
  local gc=""
  [ "$v" = "$KARPENTER_VERSION" ] || gc=$UNOPTIMIZED
  gobuild "karpenter-kwok-$v" "$v-loopback" "$d" ./kwok "" "$gc"
}

case "${1:-all}" in
  path) echo "$bin" ;;
  kube-version) echo "$K8S_VERSION" ;;
  envtest) locked etcd etcd; locked "kubernetes-$K8S_VERSION" kube "$K8S_VERSION" "" kube-apiserver ;;
  cluster|all) locked etcd etcd
    locked "kubernetes-$K8S_VERSION" kube "$K8S_VERSION" "" kube-apiserver kube-controller-manager kube-scheduler kubectl
    locked kwok kwok; locked "karpenter-$KARPENTER_VERSION" karpenter "$KARPENTER_VERSION" ;;
  karpenter) shift; [ $# -gt 0 ] || { echo "usage: $0 karpenter VERSION..." >&2; exit 2; }
    for v in "$@"; do locked "karpenter-$v" karpenter "$v"; done ;;
  kubernetes) shift; [ $# -gt 0 ] || { echo "usage: $0 kubernetes VERSION..." >&2; exit 2; }
    for v in "$@"; do locked "kubernetes-$v" kube "$v" "-$v" "${CONTROL_PLANE[@]}"; done ;;
  *) echo "usage: $0 [envtest|cluster|all|path|kube-version|karpenter VERSION...|kubernetes VERSION...]" >&2; exit 2 ;;
esac
case "${1:-all}" in path | kube-version) ;; *) log "binaries ready in $bin" ;; esac
