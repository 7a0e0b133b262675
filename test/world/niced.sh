#!/usr/bin/env bash
# niced.sh N CMD [ARG...]: runs CMD at CPU priority nice N, the priority of
# its session's autogroup too when it leads a session of its own (started
# by setsid, as every background build here is, so that it stops as one
# process group).
#
# Why the autogroup: with the kernel's autogroup scheduling on
# (/proc/sys/kernel/sched_autogroup_enabled is 1 on the CI machine), the
# CPU is shared between sessions first and a process's nice value only
# orders it within its own session. A build started by setsid at nice 15
# took as much CPU as the whole `make test` or the suites beside it
# (docs/test-world.md, "CI time"). Only a session leader renices its
# autogroup: any other caller would renice the session that started it.
set -euo pipefail
n=$1
shift
if [ "$(awk '{print $6}' /proc/$$/stat 2>/dev/null)" = "$$" ]; then
  echo "$n" >/proc/self/autogroup 2>/dev/null || true
fi
exec nice -n "$n" "$@"
