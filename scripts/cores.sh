#!/usr/bin/env bash
# Times umtrace binaries on the GPU test machine's cores against
# GOMAXPROCS=2, for issue 28's "16 cores >= 4x" (docs/performance.md). The
# machine has no Go: build here, xz the binaries into .devdeps (ignored;
# the device tool carries it, 64 MiB at most in all) and run this there:
#   go build -trimpath -ldflags='-s -w' -o /tmp/umtrace ./cmd/umtrace
#   xz -6 -c /tmp/umtrace > .devdeps/umtrace-new.xz   # and -old.xz
#   (device) bash scripts/cores.sh new old
# It decompresses .devdeps/umtrace-NAME.xz for each NAME, makes the easy
# and address-diverse synth traces of ROWS rows (default 12M; `umtrace
# synth`, as make bench does), and runs each binary RUNS times (default 3)
# per trace, all cores and GOMAXPROCS=2 alternating, `analyze -f json -o
# /dev/null` under UMTRACE_PHASES=1: wall, peak RSS and the phases on one
# line per run.
# With OUT set (the device tool's output folder), a CPU profile of the
# first binary on all cores goes there (easy, cpu-easy.prof), with an
# execution trace per shape (trace-SHAPE.out, `go tool trace`) and its
# phases with when each ended (phases-SHAPE.txt). SCALE=1 also times the
# first binary under GOMAXPROCS=4 and 8, without the soft memory limit and
# without huge pages for the heap (UMTRACE_THP=0).
set -uo pipefail
[ $# -ge 1 ] || { sed -n '2,20p' "$0" >&2; exit 2; }
RUNS=${RUNS:-3}
ROWS=${ROWS:-12000000}
for b in "$@"; do
	python3 -c "import lzma,sys; sys.stdout.buffer.write(lzma.open(sys.argv[1]).read())" ".devdeps/umtrace-$b.xz" >"/tmp/umtrace-$b" &&
		chmod +x "/tmp/umtrace-$b" || exit 1
done
U=/tmp/umtrace-$1
t0=$SECONDS
for shape in easy address-diverse; do
	"$U" synth "/tmp/$shape.sqlite" --rows "$ROWS" --seed 1 --episodes 8 --episode-steps $((ROWS / 30000 + 1)) --decoys 2 \
		--decoy-steps 20 --shape "$shape" >/dev/null &
done
wait
echo "synth $((SECONDS - t0)) s on $(nproc) cores"
cat /tmp/easy.sqlite /tmp/address-diverse.sqlite >/dev/null
one() {
	UMTRACE_PHASES=1 /usr/bin/time -f '%e s %M KB' "$@" 2>&1 | grep -v "span\|sanitizer\|startup" |
		sed 's/(ends at.*CPU/CPU/; s/allocated.*GCs,//; s/peak RSS//' | tr -s ' ' | tr '\n' ';' | sed 's/umtrace: //g'
	echo
}
# The hypervisor's share: steal time (/proc/stat) over the timed runs. A
# host whose vCPUs wait for their physical cores shortens the 16-core runs
# less than the two-core ones (twelfth session: 29% of busy time stolen,
# every binary 3.0-3.4x where other hosts gave 4.0-4.5x).
cpuline() { head -1 /proc/stat; }
s0=$(cpuline)
for shape in easy address-diverse; do
	for i in $(seq "$RUNS"); do
		for b in "$@"; do
			echo "$shape $b all cores: $(one "/tmp/umtrace-$b" analyze "/tmp/$shape.sqlite" -f json -o /dev/null)"
			echo "$shape $b GOMAXPROCS=2: $(GOMAXPROCS=2 one "/tmp/umtrace-$b" analyze "/tmp/$shape.sqlite" -f json -o /dev/null)"
		done
	done
done
s1=$(cpuline)
# cpu user nice system idle iowait irq softirq steal: the steal's share of
# the busy time (user to softirq, and steal) and of all of it.
echo "$s0 $s1" | awk '{for (i = 2; i <= 9; i++) { d[i] = $(i + 11) - $i; all += d[i] }
	busy = d[2] + d[3] + d[4] + d[7] + d[8] + d[9]
	printf "steal %.0f%% of busy CPU time, %.0f%% of all, over the timed runs\n", 100 * d[9] / busy, 100 * d[9] / all}'
if [ -n "${SCALE:-}" ]; then
	for shape in easy address-diverse; do
		for p in 4 8; do
			echo "$shape $1 GOMAXPROCS=$p: $(GOMAXPROCS=$p one "$U" analyze "/tmp/$shape.sqlite" -f json -o /dev/null)"
		done
		# The GC's share: the Go runtime's own pacing, no soft limit.
		echo "$shape $1 GOMEMLIMIT=64GiB: $(GOMEMLIMIT=64GiB one "$U" analyze "/tmp/$shape.sqlite" -f json -o /dev/null)"
		echo "$shape $1 GOMEMLIMIT=64GiB GOMAXPROCS=2: $(GOMEMLIMIT=64GiB GOMAXPROCS=2 one "$U" analyze "/tmp/$shape.sqlite" -f json -o /dev/null)"
		# Huge pages for the heap, off.
		for i in 1 2; do
			echo "$shape $1 UMTRACE_THP=0: $(UMTRACE_THP=0 one "$U" analyze "/tmp/$shape.sqlite" -f json -o /dev/null)"
			echo "$shape $1 UMTRACE_THP=0 GOMAXPROCS=2: $(UMTRACE_THP=0 GOMAXPROCS=2 one "$U" analyze "/tmp/$shape.sqlite" -f json -o /dev/null)"
		done
	done
fi
if [ -n "${OUT:-}" ]; then
	UMTRACE_CPUPROFILE="$OUT/cpu-easy.prof" UMTRACE_SUPERVISE=0 "$U" analyze /tmp/easy.sqlite -f json -o /dev/null
	for shape in easy address-diverse; do
		UMTRACE_EXECTRACE="$OUT/trace-$shape.out" UMTRACE_CPUPROFILE="$OUT/cpu-trace-$shape.prof" UMTRACE_PHASES=1 UMTRACE_SUPERVISE=0 "$U" analyze "/tmp/$shape.sqlite" -f json -o /dev/null 2>"$OUT/phases-$shape.txt"
	done
fi
