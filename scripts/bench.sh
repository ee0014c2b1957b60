#!/usr/bin/env bash
# Prints umtrace's performance table (docs/performance.md): wall time and
# peak RSS of `umtrace analyze` against a raw single-threaded sqlite3 scan
# of every column umtrace reads (the floor), measured in the same run, for
# traces of several shapes (`umtrace synth --shape`: easy, address-diverse,
# name-diverse) and sizes, with the analysis's phase split
# (UMTRACE_PHASES), plus the ingest benchmarks. Run through `make bench`
# (which builds bin/umtrace).
#
# Traces are generated once with `umtrace synth` and cached in
# ${XDG_CACHE_HOME:-$HOME/.cache}/umtrace-bench/. Environment:
#   BENCH_CASES   SHAPE:ROWS pairs (default "easy:12000000
#                 address-diverse:12000000 name-diverse:12000000 easy:30000000")
#   BENCH_RUNS    timed runs per measurement, umtrace and floor alternating;
#                 the best of each is kept (default 3: the VMs we run on
#                 drift by tens of percent from minute to minute)
#   BENCH_NO_GO   set to skip the Go ingest benchmarks
set -euo pipefail

cd "$(dirname "$0")/.."
BIN=${BIN:-bin/umtrace}
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/umtrace-bench
CASES=${BENCH_CASES:-"easy:12000000 address-diverse:12000000 name-diverse:12000000 easy:30000000"}
RUNS=${BENCH_RUNS:-3}
# Storm-heavy enough that UM migrations are a real share of the rows (about
# 15% at every size: episode length scales with the row count).
synth_flags() { echo --seed 1 --episodes 8 --episode-steps $(($1 / 30000 + 1)) --decoys 2 --decoy-steps 20 --shape "$2"; }

need() {
	local missing=()
	[ -x /usr/bin/time ] || missing+=(time)
	command -v sqlite3 >/dev/null || missing+=(sqlite3)
	[ ${#missing[@]} -eq 0 ] && return
	echo "bench: installing ${missing[*]}" >&2
	local sudo=
	[ "$(id -u)" -eq 0 ] || sudo=sudo
	$sudo apt-get update -qq >&2 && $sudo apt-get install -y -qq "${missing[@]}" >&2
}
need
[ -x "$BIN" ] || { echo "bench: $BIN missing; run make bench" >&2; exit 1; }
# Timed from a fresh copy: peak RSS counts the executable's pages as the
# page cache holds them, and a binary just linked (as make bench leaves
# it) peaks up to ~20 MiB above a copy of it with the same heap
# (docs/performance.md, fifth and sixth sessions; scripts/abtime.sh does
# the same).
BINDIR=$(mktemp -d)
trap 'rm -rf "$BINDIR"' EXIT
cp "$BIN" "$BINDIR/umtrace"
BIN=$BINDIR/umtrace
mkdir -p "$CACHE"

# The floor: one sqlite3 process reading every column `umtrace analyze`
# needs (the projection in analyze/collect.go `needed`, as ingest/nsys maps
# it to source columns), table by table, with no output formatting
# (aggregates force each value to be decoded).
floor_sql() {
	local db=$1
	local -a q=(
		'CUPTI_ACTIVITY_KIND_RUNTIME:start,"end",globalTid,correlationId,nameId'
		'CUPTI_ACTIVITY_KIND_KERNEL:start,"end",globalPid,streamId,demangledName'
		'CUPTI_ACTIVITY_KIND_MEMCPY:start,"end",globalPid,streamId,correlationId,bytes,copyKind,migrationCause,virtualAddress'
		'CUPTI_ACTIVITY_KIND_MEMSET:start,"end",globalPid,streamId,correlationId'
		'CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:globalPid,streamId,correlationId'
		'CUDA_UM_GPU_PAGE_FAULT_EVENTS:start,"end",globalPid,address,numberOfPageFaults'
		'CUDA_UM_CPU_PAGE_FAULT_EVENTS:start,globalPid,address,CpuInstruction,module,sourceFile,sourceLine'
		'NVTX_EVENTS:start,"end",globalTid,eventType,textId,text'
		'StringIds:id,value'
	)
	local e t cols sel
	for e in "${q[@]}"; do
		t=${e%%:*}
		cols=${e#*:}
		sqlite3 "$db" "SELECT 1 FROM sqlite_master WHERE name='$t'" | grep -q 1 || continue
		sel=$(echo "$cols" | tr ',' '\n' | sed 's/.*/max(&)/' | paste -sd, -)
		echo "SELECT count(*), $sel FROM $t;"
	done
}

# once CMD... prints "wall_s rss_kb cpu_s" of one run (cpu_s: user +
# system, which a loaded machine distorts less than wall time); the
# command's stderr goes to $ERR.
once() {
	local t
	t=$(mktemp)
	/usr/bin/time -o "$t" -f "%e %M %U %S" "$@" >/dev/null 2>"$ERR" || { echo "bench: $* failed:" >&2; cat "$ERR" >&2; rm -f "$t"; exit 1; }
	tail -n 1 "$t" | awk '{printf "%s %s %.2f\n", $1, $2, $3 + $4}'
	rm -f "$t"
}

# better A B prints the faster of two "wall_s rss_kb" lines (A if B is empty).
better() {
	if [ -z "$2" ] || awk -v a="${1%% *}" -v b="${2%% *}" 'BEGIN{exit !(a<b)}'; then echo "$1"; else echo "$2"; fi
}

rows_of() { sed -n 's/^  "total_rows": \([0-9]*\).*/\1/p' "$1"; }

# phases FILE prints the UMTRACE_PHASES lines of FILE as "name s" pairs,
# the phases that took at least 3% of the total.
# phases FILE: the phases of at least 3% of the total, each name once with
# its summed time; "xN" when N analyses ran it (a file of several processes
# is analyzed whole and per process, two at a time: the sum is CPU-ish
# time, not wall time).
phases() {
	awk '/^umtrace: /{if(!($2 in t)) n[++k]=$2; t[$2]+=$3; c[$2]++; sum+=$3}
		END{for(i=1;i<=k;i++) if(t[n[i]]>=0.03*sum) printf "%s%s %.2f%s", (o++?", ":""), n[i], t[n[i]], (c[n[i]]>1 ? " x" c[n[i]] : "")}' "$1"
}

echo "# umtrace bench: $(nproc) CPUs, $(awk '/MemTotal/{printf "%.0f GB", $2/1e6}' /proc/meminfo) RAM, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
echo "# traces: $CACHE (umtrace synth OUT --rows N --seed 1 --episodes 8 --episode-steps N/30000+1 --decoys 2 --decoy-steps 20 --shape SHAPE)"
echo "# best of $RUNS, umtrace and the floor alternating; median: the ratio of the two medians and umtrace's largest peak RSS of the $RUNS runs (issue 28's measure); phases (s) from umtrace's best run (UMTRACE_PHASES=1)"
echo
printf '| %-15s | %-10s | %-8s | %-22s | %-22s | %-10s | %-18s | %-16s | %s |\n' "shape" "rows" "file" "umtrace analyze s / RSS" "sqlite3 floor s / RSS" "wall ratio" "median ratio / RSS" "CPU s (u / floor)" "phases (s)"
printf '|%s|%s|%s|%s|%s|%s|%s|%s|%s|\n' ----------------- ------------ ---------- ------------------------ ------------------------ ------------ -------------------- ------------------ -----------
ERR=$(mktemp)
best_err=$(mktemp)
tr=
for c in $CASES; do
	shape=${c%%:*} n=${c#*:}
	tr="$CACHE/synth-$shape-$n.sqlite"
	if [ ! -f "$tr" ]; then
		echo "# generating $tr" >&2
		# shellcheck disable=SC2046
		"$BIN" synth "$tr" --rows "$n" $(synth_flags "$n" "$shape") >&2
	fi
	rows=$(rows_of "${tr%.sqlite}.truth.json")
	size=$(du -mL "$tr" | cut -f1)
	sqlf=$(mktemp)
	floor_sql "$tr" >"$sqlf"
	# Warm the page cache so both sides read from memory.
	cat "$tr" >/dev/null
	ub= fb= uall= fall=
	for ((r = 0; r < RUNS; r++)); do
		u=$(UMTRACE_PHASES=1 once "$BIN" analyze "$tr" --format json -o /dev/null)
		if [ "$(better "$u" "$ub")" = "$u" ]; then cp "$ERR" "$best_err"; fi
		ub=$(better "$u" "$ub")
		f=$(once sqlite3 "$tr" ".read $sqlf")
		fb=$(better "$f" "$fb")
		uall+="$u"$'\n' fall+="$f"$'\n'
	done
	# median: the ratio of the medians of the runs' walls, and umtrace's
	# largest peak RSS.
	med=$(printf '%s\n' "$uall" "$fall" | awk -v n="$RUNS" 'NF{if (++i <= n) { u[i] = $1; if ($2 > m) m = $2 } else f[i - n] = $1}
		function median(a,   k, j, t) { for (k = 1; k <= n; k++) for (j = k + 1; j <= n; j++) if (a[j] < a[k]) { t = a[k]; a[k] = a[j]; a[j] = t }
			return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
		END{fm = median(f); printf "%.2fx / %.0f MiB", (fm > 0 ? median(u) / fm : 0), m / 1024}')
	read -r uw um uc <<<"$ub"
	read -r fw fm fc <<<"$fb"
	rm -f "$sqlf"
	awk -v sh="$shape" -v n="$rows" -v s="$size" -v uw="$uw" -v um="$um" -v fw="$fw" -v fm="$fm" -v uc="$uc" -v fc="$fc" -v md="$med" -v ph="$(phases "$best_err")" 'BEGIN{
		printf "| %-15s | %10d | %4d MiB | %8.2f s / %5.0f MiB | %8.2f s / %5.0f MiB | %9.2fx | %18s | %6.2f / %6.2f | %s |\n",
			sh, n, s, uw, um/1024, fw, fm/1024, (fw > 0 ? uw/fw : 0), md, uc, fc, ph }'
done
rm -f "$ERR" "$best_err"

if [ -z "${BENCH_NO_GO:-}" ] && grep -rqs '^func Benchmark' ingest; then
	echo
	# Per-table ingest rate (rows/s) on the last trace: one full scan of
	# each table through ingest/nsys with every column.
	echo "# ingest benchmarks: UMTRACE_BENCH_TRACE=$tr go test -run=XXX -bench=. -benchtime=1x ./ingest/..."
	UMTRACE_BENCH_TRACE=$tr go test -run=XXX -bench=. -benchtime=1x -benchmem ./ingest/... 2>&1 | grep -E '^(Benchmark|ok|FAIL|---)' || true
fi

# --- multi-rank job (multi helper) ---------------------------------------
# An 8-rank job of 1.5M rows per rank (umtrace synth --ranks 8: NCCL
# all-reduce every step, storm episodes on rank 3, clocks seconds apart),
# analyzed as one job. BENCH_NO_JOB skips it.
if [ -z "${BENCH_NO_JOB:-}" ]; then
	jd="$CACHE/synth-job-8x1500000"
	if [ ! -f "$jd/job.truth.json" ]; then
		echo "# generating $jd" >&2
		"$BIN" synth "$jd" --ranks 8 --rows 1500000 --seed 1 --episodes 1 --episode-steps 20 --decoys 0 -q >&2
	fi
	cat "$jd"/*.sqlite >/dev/null
	ERR=$(mktemp)
	jb=
	for ((r = 0; r < RUNS; r++)); do
		jb=$(better "$(once "$BIN" analyze "$jd" --format json -o /dev/null)" "$jb")
	done
	rm -f "$ERR"
	read -r jw jm _ <<<"$jb"
	echo
	echo "| job | ranks x rows | files | umtrace analyze DIR s / RSS |"
	echo "|---|---:|---:|---:|"
	awk -v w="$jw" -v m="$jm" -v s="$(du -cm "$jd"/*.sqlite | tail -1 | cut -f1)" 'BEGIN{printf "| synth 8 ranks | 8 x 1500000 | %d MiB | %.2f s / %.0f MiB |\n", s, w, m/1024}'
fi
