#!/usr/bin/env bash
# Runs every fuzz target (every func FuzzXxx in a _test.go file, found by
# grep, so a new one is included) for FUZZTIME each (make fuzz).
#
# Go before 1.27 can fail a target with a bare "context deadline exceeded"
# at the end of a -fuzztime window: a race in the fuzzing coordinator
# between the deadline and its workers' context (go.dev/issue/75804, fixed
# in Go 1.27), seen in CI on a loaded VM with no failing input written. A
# run that fails that way and wrote no failing input has its target's
# corpus replayed (go test -run); only if that passes too is it counted as
# the coordinator's race and the next target run. Any other failure ends
# the run.
#   FUZZTIME=30s FUZZMINTIME=5s FUZZTIMEOUT=10m GO=go scripts/fuzz.sh
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-30s}
FUZZMINTIME=${FUZZMINTIME:-5s}
FUZZTIMEOUT=${FUZZTIMEOUT:-10m}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
grep -rHo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*' . |
	sed 's|^\(.*\)/[^/]*_test.go:func |\1 |' | sort -u |
	while read -r pkg fn; do
		echo "fuzz $fn in $pkg for $FUZZTIME"
		if "$GO" test -run '^$' -fuzz "^$fn\$" -fuzztime "$FUZZTIME" -fuzzminimizetime "$FUZZMINTIME" -timeout "$FUZZTIMEOUT" "$pkg" 2>&1 | tee "$out"; then
			continue
		fi
		# The coordinator's race: the target's failure is the bare
		# deadline, and no failing input was written.
		if grep -A1 -- "--- FAIL: $fn " "$out" | grep -qx '    context deadline exceeded' &&
			! grep -q 'Failing input written to' "$out"; then
			echo "fuzz: $fn failed with a bare \"context deadline exceeded\" and wrote no input (go.dev/issue/75804); replaying its corpus"
			"$GO" test -run "^$fn\$" -count=1 "$pkg" || exit 1
			continue
		fi
		exit 1
	done
