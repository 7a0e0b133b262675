#!/usr/bin/env bash
# The demo: a local cluster with real Karpenter (kwok provider, nodes that
# take a few seconds to boot), a Deployment on two nodes, a RotationPolicy,
# and the controller rotating the nodes make-before-break in the foreground.
# Ctrl-C stops the controller and the cluster.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$repo"
# the project's Go (the Makefile's GOTOOLCHAIN: go.mod needs Go >= 1.26.9)
export GOTOOLCHAIN=${GOTOOLCHAIN:-go1.27.3}

export NODE_BOOT_DELAY_MS=${NODE_BOOT_DELAY_MS:-4000}
kubeconfig=$("$here/cluster.sh" up | tail -n 1)
export KUBECONFIG=$kubeconfig
kubectl="$("$here/testbin.sh" path)/kubectl"
trap '"$here/cluster.sh" down' EXIT

echo "==> installing the RotationPolicy CRD, namespace and PriorityClass"
"$kubectl" apply --server-side -f config/crd/ >/dev/null
"$kubectl" wait --for condition=Established crd/rotationpolicies.noderotation.io --timeout=60s >/dev/null
"$kubectl" apply -f docs/demo/setup.yaml >/dev/null
echo "==> the workload: NodePool demo, Deployment web (4 × 1.5 CPU) with a PDB"
"$kubectl" apply -f docs/demo/workload.yaml >/dev/null
echo "==> the policy: rotate nodes older than 2m, any hour, one at a time"
"$kubectl" apply -f docs/demo/policy.yaml >/dev/null

echo "==> building and starting the controller (Ctrl-C to stop)"
go build -o "${TMPDIR:-/tmp}/node-rotation-controller-demo" ./cmd/node-rotation-controller
go build -o "${TMPDIR:-/tmp}/rotationctl" ./cmd/rotationctl
cat <<MSG

  In another terminal:
    export KUBECONFIG=$kubeconfig
    ${TMPDIR:-/tmp}/rotationctl status --watch
    ${TMPDIR:-/tmp}/rotationctl explain nodepool/demo
    $kubectl get nodeclaims -w
    $kubectl get events -A --field-selector source=node-rotation-controller -w

MSG
"${TMPDIR:-/tmp}/node-rotation-controller-demo" -kubeconfig "$kubeconfig" -leader-elect=false -log-format=text \
  -metrics-bind-address=127.0.0.1:18443 -health-probe-bind-address=127.0.0.1:18444
