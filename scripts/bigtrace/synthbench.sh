#!/usr/bin/env bash
# scripts/bench.sh's shapes on the GPU test machine (16 cores; docs/performance.md, "The bench
# shapes on 16 cores"): each trace is made there with `umtrace synth` (the bench's flags), then
# timed RUNS times, alternating: umtrace analyze with all cores and with GOMAXPROCS=2, the
# sqlite3 floor (scripts/bigtrace/floor.py: the image has no sqlite3 CLI) and, where
# .devdeps/umtrace-base.gz is carried, an older build (the A/B of issue 25) the same two ways. Run from the repository root with the device tool, carrying .devdeps
# (umtrace.gz: a stripped build of this tree):
#
#   CASES="easy:12000000 address-diverse:12000000" RUNS=3 bash scripts/bigtrace/synthbench.sh
set -u
OUT=${OUT:-/tmp/sb_out}; W=/tmp/sb; RUNS=${RUNS:-3}
CASES=${CASES:-"easy:12000000 address-diverse:12000000 name-diverse:12000000 easy:30000000"}
mkdir -p "$W" "$OUT"
exec > >(tee -a "$OUT/synthbench.log") 2>&1
gunzip -c .devdeps/umtrace.gz >/tmp/umtrace && chmod +x /tmp/umtrace; U=/tmp/umtrace
B=
if [ -f .devdeps/umtrace-base.gz ]; then
	gunzip -c .devdeps/umtrace-base.gz >/tmp/umtrace-base && chmod +x /tmp/umtrace-base; B=/tmp/umtrace-base
fi
echo "# $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
# once CMD...: wall s, peak RSS of the child, CPU s (user+system).
once() { python3 -c '
import resource, subprocess, sys, time
t = time.monotonic(); rc = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); w = time.monotonic() - t
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print("%.2f s %d MB %.2f CPU-s rc=%d" % (w, r.ru_maxrss // 1024, r.ru_utime + r.ru_stime, rc))' "$@"; }
for c in $CASES; do
	shape=${c%%:*} rows=${c##*:} T=$W/$shape-$rows.sqlite
	t0=$SECONDS
	"$U" synth "$T" --rows "$rows" --seed 1 --episodes 8 --episode-steps $((rows / 30000 + 1)) --decoys 2 --decoy-steps 20 --shape "$shape" >/dev/null
	echo "## $shape $rows: synth $((SECONDS - t0)) s, $(du -m "$T" | cut -f1) MB"
	cat "$T" >/dev/null
	for i in $(seq "$RUNS"); do
		echo "run $i: umtrace all cores: $(once "$U" analyze "$T" -f json)"
		echo "run $i: umtrace GOMAXPROCS=2: $(GOMAXPROCS=2 once "$U" analyze "$T" -f json)"
		echo "run $i: sqlite3 floor: $(once python3 scripts/bigtrace/floor.py "$T")"
		if [ -n "$B" ]; then
			echo "run $i: base all cores: $(once "$B" analyze "$T" -f json)"
			echo "run $i: base GOMAXPROCS=2: $(GOMAXPROCS=2 once "$B" analyze "$T" -f json)"
		fi
	done
	echo "phases, all cores:"; UMTRACE_PHASES=1 "$U" analyze "$T" -f json -o /dev/null 2>&1 | grep 'umtrace:' | sed 's/(ends at.*CPU/(CPU/' | head -12
	rm -f "$T"
done
