#!/usr/bin/env bash
# The suites on real Karpenter, one after another on one local cluster
# (test/world/cluster.sh, nodes that boot in NODE_BOOT_DELAY_MS): the e2e
# matrix (test/e2e), the chart-identity e2e (test/chart/identity) and the
# chaos suites (test/chaos). Each runs the controller binary named by
# NRC_CONTROLLER_BIN (make test-e2e sets the one taken out of the image) or
# builds one. The cluster is brought down on exit, pass or fail; on a
# failure the tails of the cluster's component logs are printed.
#
# Usage: test/world/e2e.sh [suite...]   suites: e2e identity chaos (default: all)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$repo"

suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(e2e identity chaos)
export NODE_BOOT_DELAY_MS=${NODE_BOOT_DELAY_MS:-8000}
GO=${GO:-go}

stage() { echo "==> [$(date +%T)] $*"; }

"$here/cluster.sh" down >/dev/null 2>&1 || true
stage "cluster up (node boot delay ${NODE_BOOT_DELAY_MS}ms)"
export KUBECONFIG
KUBECONFIG=$("$here/cluster.sh" up | tail -n 1)
export NRC_AUDIT_LOG
NRC_AUDIT_LOG=$("$here/cluster.sh" audit-log)

failed=()
on_exit() {
  if [ ${#failed[@]} -gt 0 ]; then
    logs=$(dirname "$NRC_AUDIT_LOG")
    for c in karpenter kwok kube-scheduler; do
      echo "--- last lines of $logs/$c.log ---"
      tail -n 40 "$logs/$c.log" 2>/dev/null || true
    done
  fi
  "$here/cluster.sh" down
}
trap on_exit EXIT

run() {
  local name=$1 t0=$SECONDS; shift
  stage "suite $name"
  if "$@"; then
    stage "suite $name passed in $((SECONDS - t0))s"
  else
    stage "suite $name FAILED after $((SECONDS - t0))s"
    failed+=("$name")
  fi
}

for s in "${suites[@]}"; do
  case "$s" in
    e2e) run e2e "$GO" test -count=1 -v -timeout 45m -tags e2e ./test/e2e/ -ginkgo.v ;;
    identity) run identity bash -c "cd test/chart && $GO test -count=1 -v -timeout 20m -tags e2e ./identity/" ;;
    chaos) run chaos "$GO" test -count=1 -v -timeout 45m -tags e2e ./test/chaos/ -ginkgo.v ;;
    *) echo "unknown suite $s (e2e identity chaos)" >&2; exit 2 ;;
  esac
done

if [ ${#failed[@]} -gt 0 ]; then
  stage "failed suites: ${failed[*]}"
  exit 1
fi
stage "all suites on real Karpenter passed: ${suites[*]}"
