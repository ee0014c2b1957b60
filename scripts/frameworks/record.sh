#!/usr/bin/env bash
# Records the framework traces of testdata/frameworks/ on the GPU machine, and (VALIDATE=1) runs
# `umtrace reproduce --validate` there. Run from the repository root with the device tool:
#
#   bash scripts/frameworks/record.sh [NAME...]      (carry .devdeps)
#
# Needs, prepared on the development machine (.devdeps/ is git-ignored):
#   .devdeps/libdw1_*.deb .devdeps/libelf1_*.deb   apt-get download libdw1 libelf1 (nsys's importer)
#   .devdeps/umtrace.gz                            go build -ldflags='-s -w' -o .devbin/umtrace ./cmd/umtrace; gzip -c
# NAME is any of hf_emit_nvtx hf_managed torchrun_gloo hf_profiler_steps lightning_nvtx (default:
# all). Each recording is nsys-profiled, exported to SQLite and packed with its program's output
# into $OUT/NAME.tar.gz (raw export; redact it with `umtrace redact` on the development machine).
# The run's log is $OUT/record.log; the validation's table and reasons $OUT/validate.log.
set -u
OUT=${OUT:-/tmp/fw_out}
W=/tmp/fw
rm -rf "$W"; mkdir -p "$W" "$OUT"
exec > >(tee -a "$OUT/record.log") 2>&1
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
export TORCH_SYMM_MEM_DISABLE_MULTICAST=${TORCH_SYMM_MEM_DISABLE_MULTICAST:-1}
export NVSHMEM_DISABLE_NVLS=${NVSHMEM_DISABLE_NVLS:-1}
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 GLOO_SOCKET_IFNAME=${GLOO_SOCKET_IFNAME:-lo}
S=$(cd "$(dirname "$0")" && pwd)
if ls .devdeps/*.deb >/dev/null 2>&1; then
	mkdir -p /tmp/libs && for f in .devdeps/*.deb; do dpkg -x "$f" /tmp/libs; done
	export LD_LIBRARY_PATH=/tmp/libs/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
NSYS=${NSYS:-$(ls /opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | sort -r | head -1)}
U=${U:-}
if [ -z "$U" ] && [ -f .devdeps/umtrace.gz ]; then gunzip -c .devdeps/umtrace.gz >/tmp/umtrace && chmod +x /tmp/umtrace && U=/tmp/umtrace; fi
date -u
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
"$NSYS" --version
python3 -c 'import torch, transformers; print("torch", torch.__version__, "cuda", torch.version.cuda, "transformers", transformers.__version__)'
python3 -c 'import lightning; print("lightning", lightning.__version__)' 2>&1 | tail -1
echo "nsys: $NSYS; umtrace: ${U:-none}"

FLAGS=(--trace=cuda,nvtx,osrt --cuda-um-cpu-page-faults=true --cuda-um-gpu-page-faults=true
	--cuda-memory-usage=true --sample=none --cpuctxsw=none)

# The managed-memory allocator for the managed recordings.
/usr/local/cuda/bin/nvcc -O2 -shared -Xcompiler -fPIC -o /tmp/um_alloc.so "$S/um_alloc.cu" || echo "nvcc failed"
export UM_ALLOC_SO=/tmp/um_alloc.so

# rec NAME LIMIT_S [nsys flags --] program args: profile, export, pack.
rec() {
	local name=$1 limit=$2; shift 2
	local extra=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do extra+=("$1"); shift; done
	shift
	echo "== $name: nsys profile ${FLAGS[*]} ${extra[*]} -o $name $*"
	local t0=$SECONDS
	timeout -k 10 "$limit" "$NSYS" profile "${FLAGS[@]}" "${extra[@]}" --force-overwrite=true -o "$W/$name" "$@" >"$W/$name.log" 2>&1
	echo "$name: profile rc=$? in $((SECONDS - t0)) s"
	tail -25 "$W/$name.log"
	if [ -f "$W/$name.nsys-rep" ]; then
		timeout -k 10 180 "$NSYS" export --type sqlite --force-overwrite=true -o "$W/$name.sqlite" "$W/$name.nsys-rep" >"$W/$name.export.log" 2>&1
		echo "$name: export rc=$?"; tail -3 "$W/$name.export.log"
	fi
	ls -la "$W/$name".* 2>/dev/null
	if [ -f "$W/$name.sqlite" ]; then
		python3 - "$W/$name.sqlite" <<-'EOF'
			import sqlite3, sys
			db = sqlite3.connect(sys.argv[1])
			for t in ["NVTX_EVENTS", "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_KERNEL", "CUDA_UM_GPU_PAGE_FAULT_EVENTS", "CUDA_UM_CPU_PAGE_FAULT_EVENTS", "OSRT_API"]:
			    try:
			        print(t, db.execute(f"select count(*) from {t}").fetchone()[0])
			    except sqlite3.Error as e:
			        print(t, e)
		EOF
		[ -n "$U" ] && timeout 120 "$U" analyze "$W/$name.sqlite" 2>&1 | head -40
	fi
	(cd "$W" && tar czf "$OUT/$name.tar.gz" $(ls "$name.sqlite" "$name.log" "$name.export.log" 2>/dev/null))
	echo "$name: total $((SECONDS - t0)) s"
}

want() { [ ${#NAMES[@]} -eq 0 ] && return 0; local n; for n in "${NAMES[@]}"; do [ "$n" = "$1" ] && return 0; done; return 1; }
NAMES=("$@")
ITERS=${ITERS:-10}
# Model size for the managed recordings (a toy model's host step touches too little to storm).
MANAGED_SIZE=${MANAGED_SIZE:---layers 4 --embd 512}

if [ "${VALIDATE:-0}" = 1 ] && [ -n "$U" ]; then
	echo "== validate"
	t0=$SECONDS
	(cd /tmp && timeout -k 10 240 "$U" reproduce --validate --size 64 --steps 6 --nsys "$NSYS" --out-dir /tmp/validate) >"$OUT/validate.log" 2>&1
	echo "validate rc=$? in $((SECONDS - t0)) s"; cat "$OUT/validate.log"
fi
# a) transformers loop under emit_nvtx, PyTorch's caching allocator: healthy, no iteration marks.
want hf_emit_nvtx && rec hf_emit_nvtx 150 -- python3 "$S/hf_train.py" --emit-nvtx --iters "$ITERS"
# b) the same loop on a managed-memory allocator, optimizer step on the host through the managed pages.
want hf_managed && rec hf_managed 200 -- python3 "$S/hf_train.py" --emit-nvtx --alloc managed --opt host --iters "$ITERS" $MANAGED_SIZE
# c) torchrun, 2 ranks on cuda:0 over gloo, rank 1 managed + host optimizer; user train_step ranges.
if want torchrun_gloo; then
	TR=(torchrun); command -v torchrun >/dev/null || TR=(python3 -m torch.distributed.run)
	rec torchrun_gloo 240 --trace-fork-before-exec=true -- "${TR[@]}" --standalone --nproc_per_node 2 \
		"$S/hf_train.py" --ddp --managed-ranks 1 --nvtx-steps --iters "$ITERS" $MANAGED_SIZE
fi
# d) the emit_nvtx loop inside a torch.profiler schedule (ProfilerStep#N ranges), and Lightning with
#    an NVTX callback (train_step N ranges).
want hf_profiler_steps && rec hf_profiler_steps 150 -- python3 "$S/hf_train.py" --emit-nvtx --profiler-steps --iters "$ITERS"
want lightning_nvtx && rec lightning_nvtx 150 -- python3 "$S/lightning_train.py" --iters "$ITERS"
ls -la "$OUT"
