#!/usr/bin/env bash
# The real large trace of docs/performance.md (issue 28 item 3): a HuggingFace transformers training
# loop (scripts/frameworks/hf_train.py: GPT-2 4 layers x 512 wide, random init, emit_nvtx, a
# managed-memory allocator and the optimizer on the host through the managed pages) run for ITERS
# iterations under nsys with UM fault tracing, exported to SQLite, then timed on the GPU machine:
# umtrace analyze (all cores and GOMAXPROCS=2), the sqlite3 floor (scripts/bigtrace/floor.py:
# scripts/bench.sh's query through Python's sqlite3 module) and `nsys stats` (cuda_api_sum,
# um_sum). Best of RUNS runs each. Run from the repository root with the device tool, carrying .devdeps (see scripts/frameworks/record.sh):
#
#   ITERS=300 bash scripts/bigtrace/record.sh
#
# SCALE=1 also times a 12 M-row synth trace (scripts/bench.sh's address-diverse shape) with all
# cores and with GOMAXPROCS=2 (issue 28's 4x target). BRING=1 redacts the export (`umtrace redact`)
# and leaves it in $OUT as big.sqlite.zst.NN, 15 MB parts (.devdeps/zstd: a zstd binary); join them
# with `cat big.sqlite.zst.* | zstd -d -o big.sqlite`.
set -u
OUT=${OUT:-/tmp/big_out}; W=/tmp/big; RUNS=${RUNS:-3}; ITERS=${ITERS:-300}
rm -rf "$W"; mkdir -p "$W" "$OUT"
exec > >(tee -a "$OUT/bigtrace.log") 2>&1
S=$(cd "$(dirname "$0")/../frameworks" && pwd)
mkdir -p /tmp/libs && for f in .devdeps/*.deb; do dpkg -x "$f" /tmp/libs; done
export LD_LIBRARY_PATH=/tmp/libs/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
NSYS=${NSYS:-$(ls /opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | sort -r | head -1)}
gunzip -c .devdeps/umtrace.gz >/tmp/umtrace && chmod +x /tmp/umtrace; U=/tmp/umtrace
/usr/local/cuda/bin/nvcc -O2 -shared -Xcompiler -fPIC -o /tmp/um_alloc.so "$S/um_alloc.cu"
export UM_ALLOC_SO=/tmp/um_alloc.so PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
echo "# $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nvidia-smi --query-gpu=name --format=csv,noheader)"
t0=$SECONDS
"$NSYS" profile --trace=cuda,nvtx,osrt --cuda-um-cpu-page-faults=true --cuda-um-gpu-page-faults=true \
	--cuda-memory-usage=true --sample=none --cpuctxsw=none --force-overwrite=true -o "$W/big" \
	python3 "$S/hf_train.py" --emit-nvtx --alloc managed --opt host --layers 4 --embd 512 --iters "$ITERS" >"$W/prog.log" 2>&1
echo "profile rc=$? $((SECONDS - t0)) s"; tail -2 "$W/prog.log"
t0=$SECONDS
"$NSYS" export --type sqlite --force-overwrite=true -o "$W/big.sqlite" "$W/big.nsys-rep" >/dev/null 2>&1
echo "export rc=$? $((SECONDS - t0)) s; $(du -m "$W/big.sqlite" | cut -f1) MB"
python3 "$S/../bigtrace/floor.py" --count "$W/big.sqlite"
# once CMD...: wall s, peak RSS of the child, CPU s (user+system), as /usr/bin/time would (the image may lack it).
once() { python3 -c '
import resource, subprocess, sys, time
t = time.monotonic(); rc = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); w = time.monotonic() - t
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print("%.2f s %d MB %.2f CPU-s rc=%d" % (w, r.ru_maxrss // 1024, r.ru_utime + r.ru_stime, rc))' "$@"; }
for i in $(seq "$RUNS"); do
	echo "run $i: umtrace all cores: $(once "$U" analyze "$W/big.sqlite" -f json)"
	echo "run $i: umtrace GOMAXPROCS=2: $(GOMAXPROCS=2 once "$U" analyze "$W/big.sqlite" -f json)"
	echo "run $i: sqlite3 floor: $(once python3 "$S/../bigtrace/floor.py" "$W/big.sqlite")"
	echo "run $i: nsys stats: $(once "$NSYS" stats --report cuda_api_sum,um_sum --format csv "$W/big.sqlite")"
done
"$U" analyze "$W/big.sqlite" | head -12
echo "phases, all cores:"; UMTRACE_PHASES=1 "$U" analyze "$W/big.sqlite" -f json -o /dev/null 2>&1 | grep 'umtrace:' | sed 's/(ends at.*CPU/(CPU/'
echo "phases, GOMAXPROCS=2:"; GOMAXPROCS=2 UMTRACE_PHASES=1 "$U" analyze "$W/big.sqlite" -f json -o /dev/null 2>&1 | grep 'umtrace:' | sed 's/(ends at.*CPU/(CPU/' 
"$U" analyze "$W/big.sqlite" -f json >"$OUT/big.report.json"
if [ "${SCALE:-0}" = 1 ]; then
	rows=12000000
	t0=$SECONDS
	"$U" synth "$W/s12.sqlite" --rows $rows --seed 1 --episodes 8 --episode-steps $((rows / 30000 + 1)) --decoys 2 --decoy-steps 20 --shape address-diverse >/dev/null
	echo "synth 12M address-diverse: $((SECONDS - t0)) s, $(du -m "$W/s12.sqlite" | cut -f1) MB"
	for i in $(seq "$RUNS"); do
		echo "run $i: synth12M umtrace all cores: $(once "$U" analyze "$W/s12.sqlite" -f json)"
		echo "run $i: synth12M umtrace GOMAXPROCS=2: $(GOMAXPROCS=2 once "$U" analyze "$W/s12.sqlite" -f json)"
	done
	echo "phases, all cores:"; UMTRACE_PHASES=1 "$U" analyze "$W/s12.sqlite" -f json -o /dev/null 2>&1 | grep 'umtrace:' | sed 's/(ends at.*CPU/(CPU/'
	echo "phases, GOMAXPROCS=2:"; GOMAXPROCS=2 UMTRACE_PHASES=1 "$U" analyze "$W/s12.sqlite" -f json -o /dev/null 2>&1 | grep 'umtrace:' | sed 's/(ends at.*CPU/(CPU/' 
	rm -f "$W/s12.sqlite"
fi
if [ "${BRING:-0}" = 1 ]; then
	"$U" redact "$W/big.sqlite" -o "$W/big.red.sqlite" && .devdeps/zstd -q -T0 -15 "$W/big.red.sqlite" -o "$W/big.sqlite.zst" &&
		split -b 15M -d "$W/big.sqlite.zst" "$OUT/big.sqlite.zst." && ls -la "$OUT"
fi
