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

# The compilers' collector, as the Makefile's GO_BUILD_ENV sets it for
# every go command (docs/test-world.md, "CI time"): a fifth less CPU.
BUILD_ENV="env ${GO_BUILD_ENV-GOGC=800 GOMEMLIMIT=4GiB}"

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

# locked UNIT CMD...: CMD holding UNIT's lock (flock), so two testbin.sh
# runs at once (make test-all's early builds beside make test's own) never
# build one binary or write one work directory together: the second
# waits for that one binary or directory, then finds it done. Each step
# under a lock can be killed halfway and redone (a binary is moved into
# place and stamped last, a work directory gets its marker file last), as
# test-all kills its early builds.
locked() {
  local unit=$1; shift
  (
    flock -n 9 || { log "$unit: another testbin.sh run has it; waiting"; flock 9 || exit 1; }
    "$@"
  ) 9>"$work/.lock-$unit"
}

# UNOPTIMIZED: the compiler flags of the matrix versions' binaries (a
# Karpenter version's kwok provider, a Kubernetes version's control plane
# besides the shared one): no optimizations or inlining. The same
# program, run only by one short matrix job each, and cheaper to compile
# cold (a provider: 153 s against 199 s; docs/test-world.md, "CI time",
# says what it gives up). Their stamp says so; the
# shared binaries every suite runs are built optimized, and only an
# optimized binary is fresh for them.
UNOPTIMIZED="all=-N -l"

# built NAME VERSION GCFLAGS: $bin/NAME is VERSION, optimized or built
# with GCFLAGS (an optimized one serves a build that asks for less).
built() { fresh "$1" "$2" || { [ -n "$3" ] && fresh "$1" "$2 gcflags=$3"; }; }

# gobuild NAME VERSION DIR PKG [LDFLAGS [GCFLAGS]]: one go build at a time,
# niced, holding NAME's lock.
gobuild() {
  if built "$1" "$2" "${6:-}"; then log "$1 $2: cached"; return; fi
  locked "bin-$1" gobuild_locked "$@"
}
gobuild_locked() {
  local name=$1 version=$2 dir=$3 pkg=$4 ldflags=${5:-} gcflags=${6:-}
  if built "$name" "$version" "$gcflags"; then log "$name $version: cached (built meanwhile)"; return; fi
  local tc
  tc=$(toolchain "$dir")
  log "$name $version: building $pkg with Go $tc${gcflags:+, gcflags $gcflags} (this can take minutes on a cold cache)"
  local t0=$SECONDS
  (cd "$dir" && GOTOOLCHAIN=$tc $BUILD_ENV nice -n 10 go build -trimpath -gcflags "$gcflags" -ldflags "-s -w $ldflags" -o "$bin/$name.tmp" "$pkg")
  mv "$bin/$name.tmp" "$bin/$name"
  stamp "$name" "$version${gcflags:+ gcflags=$gcflags}"
  log "$name $version: built in $((SECONDS - t0))s"
}

# module_dir DIR NAME MODULE@VERSION...: a throwaway main module NAME in
# DIR requiring each MODULE at VERSION (done once: .ready).
module_dir() {
  local d=$1 name=$2; shift 2
  [ ! -f "$d/.ready" ] || return 0
  mkdir -p "$d"
  (cd "$d" && rm -f go.mod go.sum && go mod init "$name" >/dev/null 2>&1 && go get "$@" >/dev/null 2>&1)
  touch "$d/.ready"
}

etcd() {
  fresh etcd "$ETCD_VERSION" && fresh etcdctl "$ETCD_VERSION" && { log "etcd $ETCD_VERSION: cached"; return; }
  # `go install etcd@version` is refused (replace directives in its go.mod), so
  # a throwaway main module requires the server and etcdctl modules instead.
  local d="$work/etcd-$ETCD_VERSION"
  locked "src-etcd-$ETCD_VERSION" module_dir "$d" testbin/etcd \
    "go.etcd.io/etcd/server/v3@v$ETCD_VERSION" "go.etcd.io/etcd/etcdctl/v3@v$ETCD_VERSION"
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
  local want=("$@") missing=() gc=""
  [ -z "$suffix" ] || gc=$UNOPTIMIZED
  for b in "${want[@]}"; do built "$b$suffix" "$v" "$gc" || missing+=("$b"); done
  if [ ${#missing[@]} -eq 0 ]; then log "${want[*]} $v: cached"; return; fi
  local d minor=${v#1.}
  d=$(locked "src-kubernetes-$v" kube_module "$v")
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
  locked "src-kwok-$KWOK_VERSION" module_dir "$d" testbin/kwok "sigs.k8s.io/kwok@v$KWOK_VERSION"
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
  local v=$1 gc=""
  [ "$v" = "$KARPENTER_VERSION" ] || gc=$UNOPTIMIZED
  built "karpenter-kwok-$v" "$v-loopback" "$gc" && { log "karpenter-kwok $v: cached"; return; }
  local d="$work/karpenter-$v"
  locked "src-karpenter-$v" karpenter_source "$v" "$d"
  gobuild "karpenter-kwok-$v" "$v-loopback" "$d" ./kwok "" "$gc"
}

# karpenter_source VERSION DIR: Karpenter binds its metrics and health
# listeners to ":port" with no host option; a copy of the module in DIR
# whose operator binds 127.0.0.1 keeps every listener of the test world
# on loopback (done once: .patched).
karpenter_source() {
  local v=$1 d=$2
  [ ! -f "$d/.patched" ] || return 0
  local src
  # (the newer Go: the local one refuses to download a module whose go
  # line asks for more than it is)
  src=$(cd "$work" && GOTOOLCHAIN=$NEWER_TOOLCHAIN go mod download -json "sigs.k8s.io/karpenter@v$v" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  [ -n "$src" ] || { log "karpenter $v: the Go module proxy did not give sigs.k8s.io/karpenter@v$v"; exit 1; }
  # a copy a killed run left is read-only like the module cache it came from
  if [ -e "$d" ]; then chmod -R u+w "$d"; rm -rf "$d"; fi
  cp -r "$src" "$d" && chmod -R u+w "$d"
  local n
  n=$(grep -c 'fmt.Sprintf(":%d"' "$d/pkg/operator/operator.go" || true)
  [ "$n" = 2 ] || { log "karpenter: expected 2 listener formats in operator.go, found $n"; exit 1; }
  sed -i 's/fmt.Sprintf(":%d"/fmt.Sprintf("127.0.0.1:%d"/g' "$d/pkg/operator/operator.go"
  touch "$d/.patched"
}

case "${1:-all}" in
  path) echo "$bin" ;;
  kube-version) echo "$K8S_VERSION" ;;
  envtest) etcd; kube "$K8S_VERSION" "" kube-apiserver ;;
  cluster|all) etcd; kube "$K8S_VERSION" "" kube-apiserver kube-controller-manager kube-scheduler kubectl; kwok; karpenter "$KARPENTER_VERSION" ;;
  karpenter) shift; [ $# -gt 0 ] || { echo "usage: $0 karpenter VERSION..." >&2; exit 2; }
    for v in "$@"; do karpenter "$v"; done ;;
  kubernetes) shift; [ $# -gt 0 ] || { echo "usage: $0 kubernetes VERSION..." >&2; exit 2; }
    for v in "$@"; do kube "$v" "-$v" "${CONTROL_PLANE[@]}"; done ;;
  *) echo "usage: $0 [envtest|cluster|all|path|kube-version|karpenter VERSION...|kubernetes VERSION...]" >&2; exit 2 ;;
esac
case "${1:-all}" in path | kube-version) ;; *) log "binaries ready in $bin" ;; esac
