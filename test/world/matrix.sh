#!/usr/bin/env bash
# The Karpenter version matrix: for each version, build its kwok provider
# (test/world/testbin.sh karpenter VERSION; the control plane is shared and
# built once), bring a local cluster up running that version with its own
# CRDs, run the e2e smoke and the happy-path rotation (≥ 4 nodes under a
# PDB, one NodeClaim per rotation, no Pod pending longer than the drain) and
# bring the cluster down. The full e2e matrix, the chart identity and the
# chaos suites run against the default version (make test-e2e); this covers
# the others. Each version's build and run time is printed, then a summary.
#
# Usage: test/world/matrix.sh [VERSION...]   (default: $KARPENTER_MATRIX)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$repo"

# The versions besides the default (1.13.0) that the README says are tested.
KARPENTER_MATRIX=${KARPENTER_MATRIX:-1.10.0 1.12.1 1.14.1}
versions=("$@")
[ ${#versions[@]} -gt 0 ] || read -r -a versions <<<"$KARPENTER_MATRIX"
export NODE_BOOT_DELAY_MS=${NODE_BOOT_DELAY_MS:-8000}
GO=${GO:-go}

stage() { echo "==> [$(date +%T)] $*"; }

results=()
failed=()
current=""
on_exit() {
  if [ -n "$current" ]; then
    KARPENTER_VERSION=$current "$here/cluster.sh" down >/dev/null 2>&1 || true
  fi
}
trap on_exit EXIT

for v in "${versions[@]}"; do
  stage "Karpenter $v: building its kwok provider"
  t0=$SECONDS
  if ! "$here/testbin.sh" karpenter "$v"; then
    stage "Karpenter $v: build FAILED after $((SECONDS - t0))s"
    failed+=("$v")
    results+=("$(printf '%-8s build FAILED' "$v")")
    continue
  fi
  build=$((SECONDS - t0))
  stage "Karpenter $v: built in ${build}s; cluster up"
  t1=$SECONDS
  "$here/cluster.sh" down || true # a cluster left up with another version makes up fail below
  current=$v
  if ! kubeconfig=$(KARPENTER_VERSION=$v "$here/cluster.sh" up | tail -n 1) || [ -z "$kubeconfig" ]; then
    stage "Karpenter $v: cluster up FAILED"
    KARPENTER_VERSION=$v "$here/cluster.sh" down || true
    current=""
    failed+=("$v")
    results+=("$(printf '%-8s build %4ss  cluster up FAILED' "$v" "$build")")
    continue
  fi
  outcome=passed
  if ! KUBECONFIG=$kubeconfig KARPENTER_VERSION=$v "$GO" test -count=1 -v -timeout 20m -tags e2e ./test/e2e/ \
      -ginkgo.v -ginkgo.label-filter='smoke || rotation'; then
    outcome=FAILED
    failed+=("$v")
    logs=$(dirname "$(KARPENTER_VERSION=$v "$here/cluster.sh" audit-log)")
    echo "--- last lines of $logs/karpenter.log ---"
    tail -n 40 "$logs/karpenter.log" 2>/dev/null || true
  fi
  KARPENTER_VERSION=$v "$here/cluster.sh" down
  current=""
  run=$((SECONDS - t1))
  stage "Karpenter $v: smoke + rotation $outcome in ${run}s"
  results+=("$(printf '%-8s build %4ss  run %4ss  %s' "$v" "$build" "$run" "$outcome")")
done

stage "Karpenter version matrix"
printf '  %s\n' "${results[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  stage "failed versions: ${failed[*]}"
  exit 1
fi
