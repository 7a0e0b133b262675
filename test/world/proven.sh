#!/usr/bin/env bash
# The record of what the compatibility rows proved (test/world/proven.yaml)
# and the fingerprints of their inputs (docs/test-world.md, "Rows run when
# their inputs change").
#
# A row is a real-Karpenter job of test/world/suites.sh on a version that
# is not the default: matrix:VERSION for each version of the Makefile's
# KARPENTER_MATRIX, kubernetes:VERSION for each of KUBERNETES_MATRIX.
# `make test-matrix` runs every row and records, for each, the fingerprint
# of its inputs, the commit, the date and the result. The per-submission
# gate (`make test-all`) runs the bookend row (the oldest Karpenter line)
# and every row whose inputs changed since its record, and reuses the rest.
#
# Usage: test/world/proven.sh ROWS|plan|inputs|fingerprint ROW|record ROW=RESULT...|readme
#   ROWS         every row, one a line
#   plan         each row with "run" or "reuse" and why, one a line:
#                "run matrix:1.0.8 the bookend row: every submission runs it"
#   inputs       each input group's hash, then the files of the groups
#   fingerprint  ROW's fingerprint
#   record       writes proven.yaml: every ROW=RESULT given (passes, or why
#                not), with its fingerprint, HEAD's commit and today's date;
#                the rows not given keep their entry
#   readme       rewrites README.md's versions table from the record
#                (test/world/suites.sh --versions-table)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$repo"
record_file=${NRC_PROVEN_FILE:-$here/proven.yaml}

# make_var NAME: the words of the Makefile's NAME ?= line (the environment's
# value wins, as in make).
make_var() {
  local v=${!1:-}
  [ -n "$v" ] || v=$(sed -n "s/^$1 ?= //p" Makefile)
  echo "$v"
}
karpenter_matrix=$(make_var KARPENTER_MATRIX)
kubernetes_matrix=$(make_var KUBERNETES_MATRIX)

rows() {
  local v
  for v in $karpenter_matrix; do echo "matrix:$v"; done
  for v in $kubernetes_matrix; do echo "kubernetes:$v"; done
}

# bookend: the row every submission runs, the oldest supported Karpenter
# line (the newest is the default, which every suite runs on).
bookend() { echo "matrix:$(printf '%s\n' $karpenter_matrix | sort -V | head -n 1)"; }

# The inputs of every row, in groups (docs/test-world.md names them):
#   go.sum       its sigs.k8s.io/karpenter and k8s.io lines
#   test/world   the test world: binaries, clusters, the suites' runner
#   karpenter    the packages that read or write Karpenter's objects: every
#                directory with a non-test .go file importing
#                sigs.k8s.io/karpenter, and internal/conditional (the
#                patches): each directory's own non-test .go files
#   api          api/ and config/crd/
#   e2e          test/e2e/ (the smoke and rotation the rows run, and their
#                helpers) and test/process (how they run the controller)
# The record itself and README.md are no input.
group_files() {
  case "$1" in
    test/world) git ls-files -co --exclude-standard -- test/world | grep -vx "test/world/proven.yaml" ;;
    karpenter)
      local d
      for d in $( { git grep -l '"sigs.k8s.io/karpenter' -- '*.go' ':!*_test.go' | xargs -n1 dirname; echo internal/conditional; } | sort -u); do
        git ls-files -co --exclude-standard -- "$d/*.go" | grep -v '_test\.go$' | awk -F/ -v d="$d" 'NF == split(d, _, "/") + 1'
      done ;;
    api) git ls-files -co --exclude-standard -- api config/crd ;;
    e2e) git ls-files -co --exclude-standard -- test/e2e test/process ;;
  esac | LC_ALL=C sort -u
}
GROUPS_=(go.sum test/world karpenter api e2e)

# group_hash GROUP: the hash of the group's files (names and contents).
group_hash() {
  if [ "$1" = go.sum ]; then
    grep -E '^(sigs\.k8s\.io/karpenter|k8s\.io/)' go.sum | sha256sum | cut -c1-16
    return
  fi
  local f
  group_files "$1" | while read -r f; do
    [ -f "$f" ] || continue # deleted in the work tree
    printf '%s %s\n' "$f" "$(sha256sum <"$f" | cut -c1-64)"
  done | sha256sum | cut -c1-16
}

declare -A hash_of
hashes() {
  local g
  for g in "${GROUPS_[@]}"; do hash_of[$g]=$(group_hash "$g"); done
}

# fingerprint ROW: the row's name and every group's hash.
fingerprint() {
  local g s="$1"
  for g in "${GROUPS_[@]}"; do s+=" $g=${hash_of[$g]}"; done
  echo "$s" | sha256sum | cut -c1-16
}

# recorded ROW KEY: the record's KEY of ROW ("" when none).
recorded() {
  [ -f "$record_file" ] || return 0
  awk -v row="$1" -v key="$2" '
    /^  - row: / { this = ($3 == row); next }
    this && $1 == key ":" { sub("^ *" key ": *", ""); print; exit }' "$record_file"
}

# changed_groups ROW: the groups whose hash differs from the row's record.
changed_groups() {
  local g out=()
  for g in "${GROUPS_[@]}"; do
    [ "$(recorded "$1" "input-$g")" = "${hash_of[$g]}" ] || out+=("$g")
  done
  echo "${out[*]}"
}

plan() {
  local r b
  b=$(bookend)
  hashes
  for r in $(rows); do
    local fp at on result
    fp=$(fingerprint "$r") at=$(recorded "$r" commit) on=$(recorded "$r" date) result=$(recorded "$r" result)
    if [ "$r" = "$b" ]; then
      echo "run $r the bookend row (the oldest Karpenter line): every submission runs it"
    elif [ -z "$at" ]; then
      echo "run $r no record in test/world/proven.yaml"
    elif [ "$(recorded "$r" fingerprint)" != "$fp" ]; then
      echo "run $r its inputs changed since it was proven at $at on $on: $(changed_groups "$r")"
    elif [ "$result" != passes ]; then
      echo "run $r recorded at $at on $on as: $result"
    else
      echo "reuse $r proven at $at on $on, inputs unchanged"
    fi
  done
}

# record ROW=RESULT...: proven.yaml anew, the given rows with today's
# figures, the others as they were; rows no longer configured are dropped.
record() {
  local -A result=()
  local a r g commit date
  for a in "$@"; do result[${a%%=*}]=${a#*=}; done
  hashes
  commit=$(git rev-parse --short HEAD)
  git diff --quiet HEAD -- . ':!test/world/proven.yaml' ':!README.md' 2>/dev/null || commit+=" (with uncommitted changes)"
  date=$(date -u +%F)
  local tmp
  tmp=$(mktemp "$record_file.XXXXXX")
  {
    echo "# What make test-matrix proved of each compatibility row (test/world/proven.sh"
    echo "# writes it; docs/test-world.md, \"Rows run when their inputs change\"): the"
    echo "# fingerprint of the row's inputs, each input group's hash, the commit, the"
    echo "# date and the result. The per-submission gate reruns a row whose inputs"
    echo "# changed. Not edited by hand: README.md's versions table is made from it."
    echo "rows:"
    for r in $(rows); do
      if [ -n "${result[$r]:-}" ]; then
        echo "  - row: $r"
        echo "    fingerprint: $(fingerprint "$r")"
        for g in "${GROUPS_[@]}"; do echo "    input-$g: ${hash_of[$g]}"; done
        echo "    commit: $commit"
        echo "    date: $date"
        echo "    result: ${result[$r]}"
      elif [ -n "$(recorded "$r" commit)" ]; then
        awk -v row="$r" '/^  - row: / { this = ($3 == row) } this && /^    |^  - row: /' "$record_file"
      fi
    done
  } >"$tmp"
  mv "$tmp" "$record_file"
}

# readme: README.md's versions table, between its markers, made anew.
readme() {
  local table
  table=$("$here/suites.sh" --versions-table)
  awk -v table="$table" '
    /<!-- versions table: begin -->/ { print; print table; skip = 1; next }
    /<!-- versions table: end -->/ { skip = 0 }
    !skip' README.md >README.md.tmp
  mv README.md.tmp README.md
}

case "${1:-}" in
  rows) rows ;;
  bookend) bookend ;;
  plan) plan ;;
  inputs) hashes; for g in "${GROUPS_[@]}"; do echo "$g ${hash_of[$g]}"; [ "$g" = go.sum ] || group_files "$g" | sed 's/^/  /'; done ;;
  fingerprint) hashes; fingerprint "$2" ;;
  recorded) recorded "$2" "$3" ;;
  record) shift; record "$@" ;;
  readme) readme ;;
  *) echo "usage: $0 rows|bookend|plan|inputs|fingerprint ROW|recorded ROW KEY|record ROW=RESULT...|readme" >&2; exit 2 ;;
esac
