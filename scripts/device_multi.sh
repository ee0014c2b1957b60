#!/usr/bin/env bash
# Records the multi-rank reproducer scenarios on a GPU machine and leaves the
# traces (redacted) and logs in $OUT/device_multi.tar.gz. Needs bin/umtrace
# (built with cgo on the development machine; or .devdeps/umtrace.gz, which is
# smaller to carry: go build -ldflags="-s -w", gzip) and, for nsys's importer,
# .devdeps/libdw1_*.deb and .devdeps/libelf1_*.deb (apt-get download libdw1 libelf1).
#   single GPU: multi-process (2 processes on one GPU, rank 1 storming), the
#               multi-gpu scenario dry-run as 2 processes on 1 GPU (host barrier),
#               its control, and multi-gpu with 1 rank over NCCL (checks the
#               dlopen path and records ncclDevKernel_*).
#   2+ GPUs:    multi-gpu and multi-gpu-control with one process per GPU (NCCL);
#               the job analyses of both (text and JSON) go to $OUT/job_mg.* and
#               $OUT/job_mgc.*.
# MULTI_ONLY=1 skips the single-GPU scenarios (a 2-GPU machine's time is scarce).
# NVLink multicast stays off (NCCL_NVLS_ENABLE=0 unless set).
set -u
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
export TORCH_SYMM_MEM_DISABLE_MULTICAST=${TORCH_SYMM_MEM_DISABLE_MULTICAST:-1}
export NVSHMEM_DISABLE_NVLS=${NVSHMEM_DISABLE_NVLS:-1}
OUT=${OUT:-/tmp/device_multi}
W=/tmp/device_multi
rm -rf $W; mkdir -p "$W" "$OUT"
log=$W/device_multi.log
exec > >(tee -a "$log") 2>&1
if ls .devdeps/*.deb >/dev/null 2>&1; then
	mkdir -p /tmp/libs && for f in .devdeps/*.deb; do dpkg -x "$f" /tmp/libs; done
	export LD_LIBRARY_PATH=/tmp/libs/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
NSYS=${NSYS:-$(ls /opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | sort -r | head -1)}
U=${U:-bin/umtrace}
if [ ! -x "$U" ] && [ -f .devdeps/umtrace.gz ]; then gunzip -c .devdeps/umtrace.gz >/tmp/umtrace && chmod +x /tmp/umtrace && U=/tmp/umtrace; fi
nvidia-smi -L
nvidia-smi topo -m || true
NGPU=$(nvidia-smi -L | grep -c '^GPU')
echo "nsys: $NSYS; GPUs: $NGPU"
run() { echo "+ $*"; /usr/bin/time -f "%e s" "$@"; echo "rc=$?"; }
STEPS=${STEPS:-6}
SIZE=${SIZE:-64}
if [ "${MULTI_ONLY:-0}" != 1 ]; then
	run $U reproduce --scenario multi-process --ranks 2 --storm-rank 1 --size $SIZE --steps $STEPS --out-dir $W/mp --nsys "$NSYS"
	run $U reproduce --scenario multi-gpu --ranks 2 --storm-rank 1 --size $SIZE --steps $STEPS --out-dir $W/mg1 --nsys "$NSYS" --device 0 --exchange host
	run $U reproduce --scenario multi-gpu-control --ranks 2 --size $SIZE --steps $STEPS --out-dir $W/mgc1 --nsys "$NSYS" --device 0 --exchange host
	run $U reproduce --scenario multi-gpu --ranks 1 --storm-rank 0 --size $SIZE --steps $STEPS --out-dir $W/nccl1 --nsys "$NSYS" --exchange nccl
fi
if [ "$NGPU" -ge 2 ]; then
	run $U reproduce --scenario multi-gpu --ranks "$NGPU" --storm-rank 1 --size $SIZE --steps $STEPS --out-dir $W/mg --nsys "$NSYS"
	run $U reproduce --scenario multi-gpu-control --ranks "$NGPU" --size $SIZE --steps $STEPS --out-dir $W/mgc --nsys "$NSYS"
fi
mkdir -p $W/red
for f in $W/*/*.sqlite; do
	d=$(basename "$(dirname "$f")")
	$U redact "$f" "$W/red/$d.$(basename "$f")" && ls -la "$W/red/$d.$(basename "$f")"
done
for f in $W/red/*.sqlite; do echo "== $f"; $U analyze "$f" | head -30; done
[ -f $W/red/mg1.multi-gpu.rank0.sqlite ] && { $U analyze $W/red/mg1.multi-gpu.rank0.sqlite $W/red/mg1.multi-gpu.rank1.sqlite | head -60 || true; }
for d in mg mgc; do
	ls $W/red/$d.*.rank*.sqlite >/dev/null 2>&1 || continue
	echo "== job $d"
	$U analyze $W/red/$d.*.rank*.sqlite -o "$OUT/job_$d.txt"; echo "rc=$?"
	$U analyze $W/red/$d.*.rank*.sqlite -f json -o "$OUT/job_$d.json"; echo "rc=$?"
	cat "$OUT/job_$d.txt"
done
tar -C $W --exclude='*.nsys-rep' --exclude='*.qdstrm' --exclude='*.rendezvous' -czf "$OUT/device_multi.tar.gz" red $(cd $W && ls -d mp mg1 mgc1 nccl1 mg mgc 2>/dev/null) device_multi.log
cp "$log" "$OUT/device_multi.log"
ls -la "$OUT"
