"""The sqlite3 floor of scripts/bench.sh on a machine without the sqlite3 CLI:
every column `umtrace analyze` reads, table by table, one thread, through
Python's sqlite3 module (which runs the query in SQLite's C code), with
aggregates so each value is decoded and nothing printed.

    python3 floor.py TRACE            # the timed read
    python3 floor.py --count TRACE    # prints "# rows N": the rows it reads
"""
import sqlite3
import sys

QUERY = [
    'CUPTI_ACTIVITY_KIND_RUNTIME:start,"end",globalTid,correlationId,nameId',
    'CUPTI_ACTIVITY_KIND_KERNEL:start,"end",globalPid,streamId,demangledName',
    'CUPTI_ACTIVITY_KIND_MEMCPY:start,"end",globalPid,streamId,correlationId,bytes,copyKind,migrationCause,virtualAddress',
    'CUPTI_ACTIVITY_KIND_MEMSET:start,"end",globalPid,streamId,correlationId',
    'CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:globalPid,streamId,correlationId',
    'CUDA_UM_GPU_PAGE_FAULT_EVENTS:start,"end",globalPid,address,numberOfPageFaults',
    'CUDA_UM_CPU_PAGE_FAULT_EVENTS:start,globalPid,address,CpuInstruction,module,sourceFile,sourceLine',
    'NVTX_EVENTS:start,"end",globalTid,eventType,textId,text',
    'StringIds:id,value',
]


def main(args):
    count = args[:1] == ["--count"]
    db = sqlite3.connect(args[-1])
    rows = 0
    for e in QUERY:
        t, cols = e.split(":", 1)
        if not db.execute("SELECT 1 FROM sqlite_master WHERE name=?", (t,)).fetchone():
            continue
        if count:
            rows += db.execute("SELECT count(*) FROM " + t).fetchone()[0]
            continue
        aggs = ",".join("max(%s)" % c for c in cols.split(","))
        db.execute("SELECT count(*), %s FROM %s" % (aggs, t)).fetchall()
    if count:
        print("# rows %d" % rows)


main(sys.argv[1:])
