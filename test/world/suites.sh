#!/usr/bin/env bash
# The suites on real Karpenter, each on its own local cluster
# (test/world/cluster.sh with its own run directory and ports), up to
# SUITE_CONCURRENCY at once: they mostly wait on node boot delays,
# Karpenter's batch window and readyTimeouts, so several share 2 cores.
#
# Jobs: e2e (test/e2e, every scenario but bench and quiet), e2e.1 to e2e.4 (its
# parts, by Ginkgo label: E2E_PARTS), identity (test/chart/identity), crash,
# crash-slots and faults (the campaigns of test/chaos, by label), matrix:VERSION (the e2e
# smoke and happy-path rotation on that Karpenter version) and
# kubernetes:VERSION (the same on the default Karpenter with that
# Kubernetes version's control plane); bench, the throughput benchmark
# (make bench-throughput), and quiet, the ten-minute day-one watch (make
# quiet-day-one): never default jobs. Each test binary is compiled once,
# before any cluster starts; each matrix version's kwok provider or control
# plane is built (one at a time, into the versioned cache) while the other
# jobs run, and its job starts once it is built. Each job's output
# goes to its own log, printed in full when it fails; every cluster is
# brought down on exit, pass or fail. A table of each job's wall time ends
# the run.
#
# Usage: test/world/suites.sh [job...] | --versions-table
#   (default: crash-slots crash e2e.2 e2e.1 e2e.4 e2e.3 faults identity, matrix:V for V in
#   KARPENTER_MATRIX and kubernetes:V for V in KUBERNETES_MATRIX: the longest first;
#   make test-all passes the default's jobs and the compatibility rows
#   test/world/proven.sh plans, make test-matrix every row)
#   --versions-table  README.md's versions table, from test/world/proven.yaml
# NRC_ROW_RESULTS=FILE: each row run written there as ROW=RESULT (make
# test-matrix records them).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$repo"

KARPENTER_MATRIX=${KARPENTER_MATRIX:-1.0.8 1.6.4 1.10.0 1.12.1 1.13.0 1.14.3}
# The Kubernetes versions besides the shared one (testbin.sh's K8S_VERSION,
# the newest stable release the Go module proxy serves, which every suite
# runs on), each run with the default Karpenter: the chart's kubeVersion
# minimum.
KUBERNETES_MATRIX=${KUBERNETES_MATRIX:-1.30.14}
# Versions the matrix measured failing and leaves out until they are fixed:
# their rows in the versions table say why, so a gap is never silent.
# (None today: v1.0.8 was one until the placeholder could leave out its
# hostname preference.)
declare -A KARPENTER_FAILING=()
# The controller flags a Karpenter version needs, passed to every run of
# its matrix job (NRC_CONTROLLER_ARGS, test/process) and named in its row:
# v1.0 and v1.1 ignore a Pod whose preferred node affinity names
# kubernetes.io/hostname (docs/design.md#karpenter-versions).
declare -A KARPENTER_ARGS=(
  [1.0.8]="-placeholder-hostname-preference=false"
)
# the project's Go (the Makefile's GOTOOLCHAIN: go.mod needs Go >= 1.26.9)
export GOTOOLCHAIN=${GOTOOLCHAIN:-go1.27.3}
# Measured on 2 cores (docs/test-world.md, "CI time"); at most 6, so the
# port slots stay clear of the fleet-scale benchmark's.
SUITE_CONCURRENCY=${SUITE_CONCURRENCY:-4}
[[ $SUITE_CONCURRENCY =~ ^[1-6]$ ]] || { echo "SUITE_CONCURRENCY=$SUITE_CONCURRENCY: want 1 to 6" >&2; exit 2; }
# The first port slot: a second run beside another (its own TMPDIR, so its
# own logs and run directories) takes the slots the first leaves free.
SUITE_SLOT_BASE=${SUITE_SLOT_BASE:-0}
[[ $SUITE_SLOT_BASE =~ ^[0-5]$ ]] && [ $((SUITE_SLOT_BASE + SUITE_CONCURRENCY)) -le 6 ] ||
  { echo "SUITE_SLOT_BASE=$SUITE_SLOT_BASE with SUITE_CONCURRENCY=$SUITE_CONCURRENCY: the slots must be within 0 to 5" >&2; exit 2; }
export NODE_BOOT_DELAY_MS=${NODE_BOOT_DELAY_MS:-8000}
GO=${GO:-go}
out=${NRC_SUITES_DIR:-${TMPDIR:-/tmp}/node-rotation-controller/suites}
# a run beside another must not share its directories: this one's start
# empties its suites directory, and its clusters are named by job
[ "$SUITE_SLOT_BASE" = 0 ] || [ "${TMPDIR:-/tmp}" != /tmp ] ||
  { echo "SUITE_SLOT_BASE=$SUITE_SLOT_BASE: set a TMPDIR of this run's own (the default run's logs, binaries and clusters are under /tmp)" >&2; exit 2; }

# The e2e scenarios in parts, job e2e.N running part N (docs/test-world.md,
# "CI time"): every label of test/e2e is in exactly one, or the run stops
# here. The first two take about equal time; the third is the pool
# rotated several nodes at a time, the fourth the upgrade from the
# single-anchor build with rotations in flight.
E2E_PARTS=('rotation || rollback || drainblock || smoke' 'expiry || fallback || stuckdrain || leader' 'throughput || coverage || prepull' 'upgrade')

# the jobs on the default Karpenter, longest first; with a matrix job per
# KUBERNETES_MATRIX and KARPENTER_MATRIX version they are the default run
# (the Kubernetes ones first: their control planes are the longest builds
# of the queue below, so they start it)
DEFAULT_JOBS=(crash-slots crash e2e.2 e2e.1 e2e.4 e2e.3 faults identity)
default_run() {
  jobs_=("${DEFAULT_JOBS[@]}")
  for v in $KUBERNETES_MATRIX; do jobs_+=("kubernetes:$v"); done
  for v in $KARPENTER_MATRIX; do jobs_+=("matrix:$v"); done
}
# versioned JOB: whether JOB runs a version built for it (a matrix job).
versioned() { [[ $1 == matrix:* || $1 == kubernetes:* ]]; }
jobs_=("$@")
[ ${#jobs_[@]} -gt 0 ] || default_run

# parts_cover_labels: each Label("...") of test/e2e in exactly one part.
parts_cover_labels() {
  local l n h bad=0
  # bench and quiet run by their own jobs only (a benchmark; a ten-minute watch)
  for l in $(grep -ho 'Label("[^"]*"' test/e2e/*_test.go | sed 's/Label("//; s/"$//' | grep -vx -e bench -e quiet | sort -u); do
    n=0
    for h in "${E2E_PARTS[@]}"; do [[ " $h " == *" $l "* ]] && n=$((n + 1)); done
    [ "$n" = 1 ] || { echo "test/e2e label $l is in $n of the parts of E2E_PARTS (test/world/suites.sh): it must be in one" >&2; bad=1; }
  done
  return "$bad"
}

# Every line of the runner reads "==> [HH:MM:SS] suites: …" (.ci/run's
# stage table counts the suites as one stage, with their own table).
stage() { echo "==> [$(date +%T)] suites: $*"; }

# compile: each test binary once, one at a time (2 cores), before any
# cluster starts; the jobs run them from their package directory, as go
# test does.
compile() {
  local need=() j
  for j in "${jobs_[@]}"; do
    case "$j" in
      e2e | e2e.[0-9] | matrix:* | kubernetes:* | bench | quiet) need+=(e2e) ;;
      crash | crash-slots | faults) need+=(chaos) ;;
      identity) need+=(identity) ;;
      *) echo "unknown job $j (e2e e2e.1 e2e.2 e2e.3 e2e.4 identity crash crash-slots faults bench quiet matrix:VERSION kubernetes:VERSION)" >&2; exit 2 ;;
    esac
  done
  local t0=$SECONDS b
  # the compilers' collector as the Makefile sets it (GO_BUILD_ENV)
  local GO="env ${GO_BUILD_ENV-GOGC=800 GOMEMLIMIT=4GiB} $GO"
  for b in $(printf '%s\n' "${need[@]}" | sort -u); do
    case "$b" in
      e2e) $GO test -c -tags e2e -o "$out/bin/e2e.test" ./test/e2e/ ;;
      chaos) $GO test -c -tags e2e -o "$out/bin/chaos.test" ./test/chaos/ ;;
      identity) (cd test/chart && $GO test -c -tags e2e -o "$out/bin/identity.test" ./identity/) ;;
    esac
  done
  stage "test binaries compiled in $((SECONDS - t0))s: $(ls "$out/bin" | tr '\n' ' ')"
}

# What a matrix job runs on is built one at a time, in the background
# while the other jobs run (cold, three kwok providers took 3–7 minutes
# the suites would otherwise wait for, docs/test-world.md; at nice 10,
# its session's autogroup too (niced.sh), so the suites, which mostly
# wait, keep their share): a
# Karpenter version's kwok provider, a Kubernetes version's control plane.
# A matrix job starts once its build is done. builds is the queue of
# jobs, building the job whose build is in hand.
declare -A build_rc build_secs build_t0
builds=() building="" build_pid=""
# what JOB: the thing its build makes.
what() { if [[ $1 == matrix:* ]]; then echo "Karpenter ${1#matrix:}: kwok provider"; else echo "Kubernetes ${1#kubernetes:}: control plane"; fi; }
buildlog() { echo "$out/build-${1//:/-}.log"; }
start_build() {
  [ -z "$building" ] && [ ${#builds[@]} -gt 0 ] || return 0
  building=${builds[0]} builds=("${builds[@]:1}")
  build_t0[$building]=$SECONDS
  if [[ $building == matrix:* ]]; then
    setsid "$here/niced.sh" 10 "$here/testbin.sh" karpenter "${building#matrix:}" >"$(buildlog "$building")" 2>&1 &
  else
    setsid "$here/niced.sh" 10 "$here/testbin.sh" kubernetes "${building#kubernetes:}" >"$(buildlog "$building")" 2>&1 &
  fi
  build_pid=$!
  stage "$(what "$building"): building beside the suites"
}

# built RC: the build in hand ended with RC; the next one starts.
built() {
  build_rc[$building]=$1 build_secs[$building]=$((SECONDS - build_t0[$building]))
  stage "$(what "$building") ready in ${build_secs[$building]}s (rc $1)"
  building="" build_pid=""
  start_build
}

# ready JOB: whether the job can start now (a matrix job: its build done).
ready() { ! versioned "$1" || [ -n "${build_rc[$1]:-}" ]; }

# ports SLOT: the cluster's ports for a slot, 1000 apart, on loopback;
# slot 0 is one past cluster.sh's defaults (make cluster-up, the demo) and
# slot 5 stays below the fleet-scale benchmark's (10000 past them).
ports() {
  local k=$((($1 + 1) * 1000))
  echo ETCD_PORT=$((23790 + k)) ETCD_PEER_PORT=$((23800 + k)) APISERVER_PORT=$((16443 + k)) \
    KCM_PORT=$((10357 + k)) SCHEDULER_PORT=$((10359 + k)) KWOK_PORT=$((10347 + k)) \
    KARPENTER_METRICS_PORT=$((18080 + k)) KARPENTER_HEALTH_PORT=$((18081 + k))
}

clusterdir() { echo "${TMPDIR:-/tmp}/node-rotation-controller/cluster-${1//:/-}"; }

component_tails() {
  local c
  for c in karpenter kwok kube-scheduler; do
    echo "--- last lines of $NRC_CLUSTER_DIR/logs/$c.log ---"
    tail -n 40 "$NRC_CLUSTER_DIR/logs/$c.log" 2>/dev/null || true
  done
}

# job NAME SLOT: cluster up, the suite, cluster down; the output to the
# job's log. Runs in its own session so a stop can take it down whole.
job() {
  local name=$1 slot=$2 kubeconfig rc=0
  if [[ $name == matrix:* ]]; then export KARPENTER_VERSION=${name#matrix:}; else unset KARPENTER_VERSION; fi
  if [[ $name == kubernetes:* ]]; then export CONTROL_PLANE_VERSION=${name#kubernetes:}; else unset CONTROL_PLANE_VERSION; fi
  export NRC_CLUSTER_DIR
  NRC_CLUSTER_DIR=$(clusterdir "$name")
  # shellcheck disable=SC2046
  export $(ports "$slot")
  "$here/cluster.sh" down >/dev/null 2>&1 || true
  echo "--> [$(date +%T)] $name: cluster up in $NRC_CLUSTER_DIR (slot $slot, apiserver port $APISERVER_PORT, Karpenter ${KARPENTER_VERSION:-default}, control plane ${CONTROL_PLANE_VERSION:-shared})"
  if ! kubeconfig=$("$here/cluster.sh" up | tail -n 1) || [ -z "$kubeconfig" ]; then
    component_tails
    "$here/cluster.sh" down || true
    return 3
  fi
  export KUBECONFIG=$kubeconfig NRC_AUDIT_LOG
  NRC_AUDIT_LOG=$("$here/cluster.sh" audit-log)
  case "$name" in
    e2e) (cd test/e2e && "$out/bin/e2e.test" -test.v -test.timeout 45m -ginkgo.v -ginkgo.label-filter='!bench && !quiet') || rc=$? ;;
    bench) (cd test/e2e && "$out/bin/e2e.test" -test.v -test.timeout 60m -ginkgo.v -ginkgo.label-filter=bench) || rc=$? ;;
    quiet) (cd test/e2e && "$out/bin/e2e.test" -test.v -test.timeout 30m -ginkgo.v -ginkgo.label-filter=quiet) || rc=$? ;;
    e2e.[0-9]) (cd test/e2e && "$out/bin/e2e.test" -test.v -test.timeout 30m -ginkgo.v -ginkgo.label-filter="$E2E_PART") || rc=$? ;;
    crash | crash-slots | faults) (cd test/chaos && "$out/bin/chaos.test" -test.v -test.timeout 45m -ginkgo.v -ginkgo.label-filter="$name") || rc=$? ;;
    identity) (cd test/chart/identity && "$out/bin/identity.test" -test.v -test.timeout 20m) || rc=$? ;;
    matrix:* | kubernetes:*) (cd test/e2e && "$out/bin/e2e.test" -test.v -test.timeout 20m -ginkgo.v -ginkgo.label-filter='smoke || rotation') || rc=$? ;;
  esac
  [ "$rc" = 0 ] || component_tails
  "$here/cluster.sh" down || true
  return "$rc"
}

declare -A pid_of slot_of started outcome took
running=()
on_exit() {
  local j
  for j in "${running[@]}"; do
    kill -- -"${pid_of[$j]}" 2>/dev/null || true
  done
  [ -z "$build_pid" ] || kill -- -"$build_pid" 2>/dev/null || true
  # the suites stop their controllers on SIGTERM; give them the time
  for j in "${running[@]}"; do
    for _ in $(seq 1 50); do kill -0 "${pid_of[$j]}" 2>/dev/null || break; sleep 0.2; done
  done
  for j in "${jobs_[@]}"; do
    NRC_CLUSTER_DIR=$(clusterdir "$j") "$here/cluster.sh" down >/dev/null 2>&1 || true
  done
}
trap on_exit EXIT

# reap: waits for one job or the provider build in hand to end and
# reports it (a failed job's log in full).
reap() {
  local done_pid="" rc=0 j pids=()
  for j in "${running[@]}"; do pids+=("${pid_of[$j]}"); done
  [ -z "$build_pid" ] || pids+=("$build_pid")
  [ ${#pids[@]} -gt 0 ] || { stage "nothing running and nothing to wait for"; exit 1; }
  wait -n -p done_pid "${pids[@]}" || rc=$?
  [ -n "$done_pid" ] || { stage "lost track of the running jobs (wait: $rc)"; exit 1; }
  if [ "$done_pid" = "$build_pid" ]; then built "$rc"; return; fi
  for j in "${running[@]}"; do
    [ "${pid_of[$j]}" = "$done_pid" ] || continue
    took[$j]=$((SECONDS - started[$j]))
    if [ "$rc" = 0 ]; then
      outcome[$j]=passed
      stage "$j passed in ${took[$j]}s (log $out/${j//:/-}.log)"
    else
      outcome[$j]="FAILED (rc $rc)"
      stage "$j FAILED after ${took[$j]}s; its log:"
      cat "$out/${j//:/-}.log"
    fi
    free_slots+=("${slot_of[$j]}")
    local keep=() r
    for r in "${running[@]}"; do [ "$r" = "$j" ] || keep+=("$r"); done
    running=("${keep[@]}")
    return
  done
}

# launch JOB: its cluster and suite on a free slot, in its own session.
launch() {
  local j=$1 slot part=
  slot=${free_slots[0]} free_slots=("${free_slots[@]:1}")
  started[$j]=$SECONDS slot_of[$j]=$slot
  if [[ $j == e2e.[0-9] ]]; then
    part=${E2E_PARTS[${j#e2e.} - 1]:-}
    [ -n "$part" ] || { echo "job $j: E2E_PARTS has no part ${j#e2e.}" >&2; exit 2; }
  fi
  local args=
  [[ $j != matrix:* ]] || args=${KARPENTER_ARGS[${j#matrix:}]:-}
  NRC_CONTROLLER_ARGS=$args E2E_PART=$part \
    setsid bash -c "$(declare -f job ports clusterdir component_tails); here='$here' out='$out' GO='$GO' job '$j' '$slot'" >"$out/${j//:/-}.log" 2>&1 &
  pid_of[$j]=$!
  running+=("$j")
  stage "$j started on slot $slot"
}

# versions_table [record]: the supported versions as README.md's table
# "Supported versions" prints them, line for line
# (cmd/node-rotation-controller/versions_test.go holds the README to the
# versions configured here): the default's row (every suite, every
# submission), then a row per compatibility row (test/world/proven.sh
# rows): the Karpenter ones, then the Kubernetes ones. A row this run ran
# has this run's result; any other, and every row with "record", what
# test/world/proven.yaml holds (make test-matrix wrote it).
versions_table() {
  local j v rows=() bad=() all=1 k8s karpenter from_record=${1:-} bookend
  k8s=${K8S_VERSION:-$(sed -n 's/^K8S_VERSION=\${K8S_VERSION:-\(.*\)}$/\1/p' "$here/testbin.sh")}
  karpenter=$(sed -n 's/^KARPENTER_VERSION=\${KARPENTER_VERSION:-\(.*\)}$/\1/p' "$here/testbin.sh")
  bookend=$(KARPENTER_MATRIX=$KARPENTER_MATRIX "$here/proven.sh" bookend)
  for j in "${DEFAULT_JOBS[@]}"; do
    [ -n "$from_record" ] || [ -n "${outcome[$j]:-}" ] || { all=; continue; }
    [ -n "$from_record" ] || [ "${outcome[$j]}" = passed ] || bad+=("$j")
  done
  if [ -n "$all" ]; then
    rows+=("| **v$karpenter** (default: \`go.mod\` builds against it) | v$k8s | every suite on real Karpenter: the e2e scenarios, chart identity, the crash and fault campaigns; every submission (\`make test-all\`) | $(result "${bad[*]}") |")
  fi
  for v in $(printf '%s\n' "${!KARPENTER_FAILING[@]}" | sort -V); do
    rows+=("| v$v | v$k8s | the e2e smoke and the happy-path rotation, not run | ${KARPENTER_FAILING[$v]} |")
  done
  for j in $(KARPENTER_MATRIX=$KARPENTER_MATRIX KUBERNETES_MATRIX=$KUBERNETES_MATRIX "$here/proven.sh" rows); do
    local when at
    at=$("$here/proven.sh" recorded "$j" commit)
    if [ -z "$from_record" ] && [ -n "${outcome[$j]:-}" ]; then
  v=$(row_result "$j")
      when="run by this run ($(date -u +%F))"
    elif [ -n "$at" ]; then
      v=$("$here/proven.sh" recorded "$j" result)
      when="\`make test-matrix\` at $at on $("$here/proven.sh" recorded "$j" date)"
    else
      v="not proven: no record in test/world/proven.yaml"
      when="\`make test-matrix\`"
    fi
    if [ "$j" = "$bookend" ]; then when+="; every submission (the bookend row)"; else when+="; a submission that changes its inputs"; fi
    if [[ $j == matrix:* ]]; then
      local with=${KARPENTER_ARGS[${j#matrix:}]:-}
      rows+=("| v${j#matrix:} | v$k8s | the e2e smoke and the happy-path rotation${with:+, the controller run with \`$with\`}: $when | $v |")
    else
      rows+=("| v$karpenter | v${j#kubernetes:} | the e2e smoke and the happy-path rotation: $when | $v |")
    fi
  done
  [ ${#rows[@]} -gt 0 ] || return 0
  echo "| Karpenter | Kubernetes | tested by | result |"
  echo "|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
}
# row_result JOB: a row's result as the table and the record say it.
row_result() {
  case "${outcome[$1]}" in
    passed) echo passes ;;
    "build FAILED") if [[ $1 == matrix:* ]]; then echo "fails: its kwok provider does not build"; else echo "fails: its control plane does not build"; fi ;;
    "FAILED (rc 3)") echo "fails: its cluster does not come up (its CRDs, Karpenter or the control plane)" ;;
    *) echo fails ;;
  esac
}
# result JOBS: a row's result, given the jobs that failed.
result() { if [ -z "$1" ]; then echo passes; else echo "fails ($1)"; fi; }

# --versions-table: the table of the record (test/world/proven.yaml),
# the default's row passing (every submission runs it); versions_test.go
# compares README.md with it and test/world/proven.sh readme writes it.
if [ "${jobs_[0]:-}" = --versions-table ]; then
  trap - EXIT # no cluster of its own, and another run's are not its to stop
  versions_table record
  exit 0
fi

rm -rf "$out" && mkdir -p "$out/bin"
parts_cover_labels
compile
# the cluster's binaries once, before any job: a job's cluster.sh up then
# only finds them cached (never two builds into one cache at once)
t0=$SECONDS
"$here/testbin.sh" cluster >"$out/build-cluster.log" 2>&1 || { cat "$out/build-cluster.log"; exit 1; }
stage "the cluster's binaries ready in $((SECONDS - t0))s"
if [ -z "${NRC_CONTROLLER_BIN:-}" ]; then
  # one controller binary for every job, not one build per suite
  "$GO" build -o "$out/bin/node-rotation-controller" ./cmd/node-rotation-controller
  export NRC_CONTROLLER_BIN=$out/bin/node-rotation-controller
fi
for j in "${jobs_[@]}"; do ! versioned "$j" || builds+=("$j"); done
stage "suites on real Karpenter, $SUITE_CONCURRENCY at a time: ${jobs_[*]} (node boot delay ${NODE_BOOT_DELAY_MS}ms)"
free_slots=()
for ((s = SUITE_SLOT_BASE; s < SUITE_SLOT_BASE + SUITE_CONCURRENCY; s++)); do free_slots+=("$s"); done
t_all=$SECONDS
start_build
# In the order given, except that a matrix job whose build is not done
# lets the jobs behind it go first.
pending=("${jobs_[@]}")
while [ ${#pending[@]} -gt 0 ]; do
  next=""
  for j in "${pending[@]}"; do ready "$j" && { next=$j; break; }; done
  # a matrix job whose build failed needs no slot: its row says so
  failed_build=
  versioned "$next" && [ "${build_rc[$next]}" != 0 ] && failed_build=1
  if [ -z "$next" ] || { [ -z "$failed_build" ] && [ ${#free_slots[@]} -eq 0 ]; }; then reap; continue; fi
  keep=()
  for j in "${pending[@]}"; do [ "$j" = "$next" ] || keep+=("$j"); done
  pending=("${keep[@]}")
  if [ -n "$failed_build" ]; then
    outcome[$next]="build FAILED" took[$next]=0
    stage "$next: $(what "$next") did not build; its log:"
    cat "$(buildlog "$next")"
    continue
  fi
  launch "$next"
done
while [ ${#running[@]} -gt 0 ] || [ -n "$build_pid" ]; do reap; done

stage "suites on real Karpenter done in $((SECONDS - t_all))s (concurrency $SUITE_CONCURRENCY)"
failed=()
printf '  %-16s %-8s %s\n' job seconds outcome
for j in "${jobs_[@]}"; do
  extra=""
  ! versioned "$j" || extra=" (build ${build_secs[$j]}s)"
  printf '  %-16s %-8s %s%s\n' "$j" "${took[$j]}" "${outcome[$j]}" "$extra"
  [ "${outcome[$j]}" = passed ] || failed+=("$j")
done
# NRC_ROW_RESULTS=FILE: each row this run ran, as ROW=RESULT a line (make
# test-matrix records them: test/world/proven.sh record).
if [ -n "${NRC_ROW_RESULTS:-}" ]; then
  for j in "${jobs_[@]}"; do ! versioned "$j" || echo "$j=$(row_result "$j")"; done >"$NRC_ROW_RESULTS"
fi
echo "==> supported versions, as this run found them on $(date -u +%F) (README.md, \"Supported versions\"):"
versions_table
if [ ${#failed[@]} -gt 0 ]; then
  # A failed job's log was printed in full above, its components' log
  # tails last; the lines that say why it failed come again here, at the
  # end, where a truncated CI excerpt still shows them.
  for j in "${failed[@]}"; do
    if [ "${outcome[$j]}" = "build FAILED" ]; then
      echo "--- why $j failed (the end of $(buildlog "$j")) ---"
      tail -n 15 "$(buildlog "$j")" 2>/dev/null || true
      continue
    fi
    echo "--- why $j failed (from $out/${j//:/-}.log) ---"
    sed 's/\x1b\[[0-9;]*m//g' "$out/${j//:/-}.log" 2>/dev/null |
      grep -a -E '\[FAILED\]|\[PANICKED\]|VIOLATION|--- FAIL|^\s+(Expected|Timed out|Unexpected error)|^\[cluster [0-9:]+\] ERROR' | head -n 40 || true
  done
  stage "failed: ${failed[*]}"
  exit 1
fi
