#!/usr/bin/env bash
# Compares umtrace binaries (or settings) on one trace by alternating runs,
# for before/after figures on a VM whose speed drifts from minute to
# minute (docs/performance.md). Each CONFIG is "ENV=VALUE... BINARY" (use
# X=1 for none); each run is `env CONFIG analyze TRACE -f json -o
# /dev/null` under /usr/bin/time. Prints per config the median and best
# wall time, the median CPU time (user + system), the median and largest
# peak RSS and the median count of minor page faults. Each binary is run
# from a fresh copy of it: peak RSS counts the executable's pages as the
# page cache holds them, and a binary just linked and a copy of it differ
# by up to ~20 MiB with the same heap (docs/performance.md, fourth and
# fifth sessions).
#   scripts/abtime.sh TRACE RUNS CONFIG...
#   scripts/abtime.sh big.sqlite 3 "X=1 /tmp/old-umtrace" "X=1 bin/umtrace"
set -euo pipefail
[ $# -ge 3 ] || { sed -n '2,15p' "$0" >&2; exit 2; }
T=$1 N=$2
shift 2
raw=$(mktemp)
t=$(mktemp)
bins=$(mktemp -d)
trap 'rm -rf "$raw" "$t" "$bins"' EXIT
# Each config's binary (its last word), copied.
run=()
k=0
for cfg in "$@"; do
	b=${cfg##* } e=X=1
	[[ $cfg == *" "* ]] && e=${cfg% *}
	cp "$b" "$bins/$k"
	run+=("$e $bins/$k")
	k=$((k + 1))
done
for ((i = 0; i < N; i++)); do
	k=0
	for cfg in "${run[@]}"; do
		# shellcheck disable=SC2086
		/usr/bin/time -o "$t" -f "%e %U %S %M %R" env $cfg analyze "$T" -f json -o /dev/null 2>/dev/null
		echo "$k $(cat "$t")" >>"$raw"
		k=$((k + 1))
	done
done
python3 - "$raw" "$@" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
for k, c in enumerate(sys.argv[2:]):
    r = [list(map(float, x[1:])) for x in rows if int(x[0]) == k]
    w = [x[0] for x in r]; u = [x[1] + x[2] for x in r]; m = [x[3] / 1024 for x in r]; f = [x[4] for x in r]
    print("%-45s wall med %.2f s, best %.2f s | CPU med %.2f s | peak RSS med %.0f, max %.0f MiB | minor faults med %d"
          % (c, st.median(w), min(w), st.median(u), st.median(m), max(m), st.median(f)))
PY
