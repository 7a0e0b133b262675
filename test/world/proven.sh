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
# Usage: test/world/proven.sh rows|plan|inputs|snapshot|fingerprint ROW|record [--from SNAPSHOT] ROW=RESULT...|readme
#   rows         every row the Makefile configures, one a line
#   plan         each row with "run" or "reuse" and why, one a line:
#                "run matrix:1.0.8 the bookend row: every submission runs it"
#   inputs       each input group's hash, then the files of the groups
#   fingerprint  ROW's fingerprint
#   snapshot     the commit and each group's hash, as a run starts
#   record       writes proven.yaml: every ROW=RESULT given (passes, or why
#                not), with its fingerprint, the commit and today's date
#                (the snapshot's commit and hashes with --from: a row whose
#                inputs changed during the run is recorded not proven); the
#                rows not given keep their entry
#   readme       rewrites README.md's versions table from the record
#                (test/world/suites.sh --versions-table)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$repo"
record_file=${NRC_PROVEN_FILE:-$here/proven.yaml}

# make_var NAME: the words of the Makefile's NAME ?= line. The file's,
# not the environment's: `make test-matrix PROVE=…` proves a subset of the
# rows the Makefile configures, and the record keeps every other row.
make_var() { sed -n "s/^$1 ?= //p" Makefile; }
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
#   modules      go.sum's sigs.k8s.io/, k8s.io/ and
#                github.com/awslabs/operatorpkg lines (Karpenter's API,
#                client-go, controller-runtime, the condition type); go.mod's
#                go, toolchain, godebug and replace lines; the Makefile's
#                GOTOOLCHAIN and IMAGE_GOBUILD_FLAGS (how the binary the
#                rows run is built)
#   test/world   the test world: binaries, clusters, the suites' runner
#   controller   the packages the rows compile (the import closure of
#                cmd/node-rotation-controller, test/e2e and test/process)
#                that read or write Karpenter's objects, labels or
#                annotations — a non-test .go file importing
#                sigs.k8s.io/karpenter or naming karpenter.sh (or
#                v1alpha1's Karpenter constants) — and
#                cmd/node-rotation-controller (the binary's flags and
#                wiring) and internal/conditional (the patches): each
#                directory's own non-test .go files
#   api          api/ and config/crd/
#   e2e          test/e2e/ (the smoke and rotation the rows run, and their
#                helpers) and test/process (how they run the controller)
# The record itself and README.md are no input; nor are the packages of
# the closure that touch nothing of Karpenter (engine/, rules/, the
# schedule's arithmetic: what is decided, not what is read or written,
# which the bookend row and the default's suites run in every submission).
module=github.com/noderotation/node-rotation-controller

# pkg_files DIR: the package's own non-test .go files (not its
# subdirectories').
pkg_files() {
  git ls-files -co --exclude-standard -- "$1/*.go" 2>/dev/null | grep -v '_test\.go$' | awk -F/ -v d="$1" 'NF == split(d, _, "/") + 1' || true
}

# closure: the repository's packages the rows compile, from the
# controller's main and the e2e suite (its test files, whatever their
# build tags) through every import of the module's own packages.
closure() {
  local -A seen=()
  local queue=(cmd/node-rotation-controller test/e2e test/process) d files
  while [ ${#queue[@]} -gt 0 ]; do
    d=${queue[0]} queue=("${queue[@]:1}")
    [ -z "${seen[$d]:-}" ] || continue
    seen[$d]=1
    echo "$d"
    if [ "$d" = test/e2e ]; then files=$(git ls-files -co --exclude-standard -- "$d/*.go" 2>/dev/null); else files=$(pkg_files "$d"); fi
    [ -n "$files" ] || continue
    # shellcheck disable=SC2086 # one file a word
    queue+=($(grep -ho "\"$module/[^\"]*\"" $files | tr -d '"' | sed "s#^$module/##" | sort -u))
  done
}

group_files() {
  case "$1" in
    modules) echo go.sum go.mod Makefile | tr ' ' '\n' ;;
    test/world) git ls-files -co --exclude-standard -- test/world | grep -vx "test/world/proven.yaml" ;;
    controller)
      local d files
      for d in $(closure); do
        case "$d" in test/e2e | test/process) continue ;; esac
        files=$(pkg_files "$d")
        [ -n "$files" ] || continue
        # shellcheck disable=SC2086 # one file a word
        if [ "$d" = cmd/node-rotation-controller ] || [ "$d" = internal/conditional ] ||
          grep -qE '"sigs\.k8s\.io/karpenter|karpenter\.sh|v1alpha1\.Karpenter' $files; then
          echo "$files"
        fi
      done ;;
    api) git ls-files -co --exclude-standard -- api config/crd ;;
    e2e) git ls-files -co --exclude-standard -- test/e2e test/process ;;
  esac | LC_ALL=C sort -u
}
GROUPS_=(modules test/world controller api e2e)

# group_hash GROUP: the hash of the group's files (names and contents);
# of modules, the lines named above.
group_hash() {
  if [ "$1" = modules ]; then
    {
      grep -E '^(sigs\.k8s\.io/|k8s\.io/|github\.com/awslabs/operatorpkg )' go.sum || true
      grep -E '^(go|toolchain|godebug|replace) ' go.mod || true
      sed -n '/^replace (/,/^)/p; /^godebug (/,/^)/p' go.mod
      grep -E '^(GOTOOLCHAIN|IMAGE_GOBUILD_FLAGS) ' Makefile || true
    } | sha256sum | cut -c1-16
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

# recorded ROW KEY: the record's KEY of ROW ("" when none); a quoted
# value unquoted.
recorded() {
  [ -f "$record_file" ] || return 0
  awk -v row="$1" -v key="$2" '
    /^  - row: / { this = ($3 == row); next }
    this && $1 == key ":" {
      sub("^ *" key ": *", "")
      if ($0 ~ /^".*"$/) { $0 = substr($0, 2, length($0) - 2); gsub(/\\"/, "\""); gsub(/\\\\/, "\\") }
      print; exit
    }' "$record_file"
}

# yaml_value V: V as a YAML scalar: passes as it is, anything else quoted.
yaml_value() {
  if [ "$1" = passes ]; then echo passes; return; fi
  local v=${1//\\/\\\\}
  echo "\"${v//\"/\\\"}\""
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

# head_commit: HEAD's short hash, marked when the tree differs from it
# (untracked files too; the record and README.md aside).
head_commit() {
  local c
  c=$(git rev-parse --short HEAD)
  [ -z "$(git status --porcelain --untracked-files=all -- . ':!test/world/proven.yaml' ':!README.md' ':!dist')" ] || c+=" (with uncommitted changes)"
  echo "$c"
}

# snapshot: the commit and every group's hash as make test-matrix starts,
# so that the record is of what was tested, not of the tree at its end.
snapshot() {
  local g
  hashes
  echo "commit $(head_commit)"
  for g in "${GROUPS_[@]}"; do echo "hash $g ${hash_of[$g]}"; done
}

# record [--from SNAPSHOT] ROW=RESULT...: proven.yaml anew, the given rows
# with today's figures, every other row the Makefile configures as it was.
# With a snapshot the commit and hashes are the snapshot's, and a row is
# recorded "not proven" when its inputs changed while it ran.
record() {
  local -A result=() now_of=()
  local a r g commit date snap="" moved=""
  if [ "${1:-}" = --from ]; then snap=$2; shift 2; fi
  for a in "$@"; do result[${a%%=*}]=${a#*=}; done
  hashes
  commit=$(head_commit)
  if [ -n "$snap" ]; then
    for g in "${GROUPS_[@]}"; do now_of[$g]=${hash_of[$g]}; done
    commit=$(sed -n 's/^commit //p' "$snap")
    while read -r a g r; do [ "$a" != hash ] || hash_of[$g]=$r; done <"$snap"
    for g in "${GROUPS_[@]}"; do [ "${now_of[$g]}" = "${hash_of[$g]}" ] || moved+=" $g"; done
  fi
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
        [ -z "$moved" ] || result[$r]="not proven: its inputs changed during the run:$moved"
        echo "  - row: $r"
        echo "    fingerprint: $(fingerprint "$r")"
        for g in "${GROUPS_[@]}"; do echo "    input-$g: ${hash_of[$g]}"; done
        echo "    commit: $commit"
        echo "    date: $date"
        echo "    result: $(yaml_value "${result[$r]}")"
      elif [ -n "$(recorded "$r" commit)" ]; then
        awk -v row="$r" '/^  - row: / { this = ($3 == row) } this && /^    |^  - row: /' "$record_file"
      fi
    done
  } >"$tmp"
  mv "$tmp" "$record_file"
  [ -z "$moved" ] || { echo "proven.sh: inputs changed during the run:$moved; the rows run are recorded not proven" >&2; return 1; }
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
  inputs) hashes; for g in "${GROUPS_[@]}"; do echo "$g ${hash_of[$g]}"; group_files "$g" | sed 's/^/  /'; done ;;
  snapshot) snapshot ;;
  fingerprint) hashes; fingerprint "$2" ;;
  recorded) recorded "$2" "$3" ;;
  record) shift; record "$@" ;;
  readme) readme ;;
  *) echo "usage: $0 rows|bookend|plan|inputs|snapshot|fingerprint ROW|recorded ROW KEY|record [--from SNAPSHOT] ROW=RESULT...|readme" >&2; exit 2 ;;
esac
