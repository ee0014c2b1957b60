#!/bin/bash
# Real-nsys check of .nsys-rep input, run on the GPU machine (see ../shared/docs/DEVICE.md):
# profiles ../shared/traces/um_pingpong.cu under nsys, then analyzes the .nsys-rep through
# umtrace's export cache, a second time from the cache, in a batch, and against a hand export.
# Prepare here:  go build -ldflags='-s -w' -o bin/umtrace ./cmd/umtrace
#                mkdir -p bin/debs && (cd bin/debs && apt-get download libdw1 libelf1)
#                cp ../shared/traces/um_pingpong.cu bin/ && cp scripts/device_nsysrep.sh bin/nsysrep.sh
# Run there with the device tool: bash bin/nsysrep.sh, carrying bin/umtrace bin/debs
# bin/um_pingpong.cu bin/nsysrep.sh. Reports land in $OUT.
set -x
cd bin
mkdir -p /tmp/libs && for f in debs/*.deb; do dpkg -x "$f" /tmp/libs; done
export LD_LIBRARY_PATH=/tmp/libs/usr/lib/x86_64-linux-gnu
NSYS=/opt/nvidia/nsight-compute/2025.3.1/host/target-linux-x64/nsys
/usr/local/cuda/bin/nvcc -O2 -arch=sm_90 -o /tmp/pp um_pingpong.cu -lcupti || exit 1
mkdir -p /tmp/reps
$NSYS profile --trace=cuda,nvtx,osrt --cuda-um-cpu-page-faults=true --cuda-um-gpu-page-faults=true \
  --cuda-memory-usage=true -o /tmp/reps/pp env NO_CUPTI=1 /tmp/pp 0 8 64 > /tmp/prof.log 2>&1; tail -3 /tmp/prof.log
ls -la /tmp/reps
export XDG_CACHE_HOME=/tmp/cache
./umtrace analyze /tmp/reps/pp.nsys-rep --nsys $NSYS -o $OUT/pp.md; echo "rc=$?"
head -30 $OUT/pp.md
./umtrace analyze /tmp/reps/pp.nsys-rep --nsys $NSYS -f json -o $OUT/pp.json; echo "rc(cached)=$?"
find /tmp/cache -type f | head; ls -la /tmp/reps
# on PATH lookup, and UMTRACE_NSYS
UMTRACE_NSYS=$NSYS ./umtrace batch /tmp/reps -o $OUT/batch.md; echo "batch rc=$?"; cat $OUT/batch.md | head -20
# without nsys: clear message
PATH=/usr/bin:/bin XDG_CACHE_HOME=/tmp/cache2 ./umtrace analyze /tmp/reps/pp.nsys-rep; echo "nonsys rc=$?"
# the same trace exported by hand must give the same report
$NSYS export --type sqlite -o /tmp/reps/hand.sqlite /tmp/reps/pp.nsys-rep >/dev/null 2>&1
./umtrace analyze /tmp/reps/hand.sqlite -f json -o $OUT/hand.json; echo "hand rc=$?"
cp /tmp/reps/pp.nsys-rep $OUT/ 2>/dev/null
ls -la $OUT
