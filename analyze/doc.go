// Package analyze turns one trace (an ingest.Source) into its analysis:
// per-API latency statistics, training steps, fault-driven unified-memory
// activity, UM stalls grouped into storm episodes, their attribution, the
// unified-memory summary, per-step rows, timeline and chart data,
// per-device and per-process views, the verdict and mitigations
// (docs/method.md). AnalyzeFile returns it as a File, from one read of the
// file; Analyze returns only its Result, which is also umtrace's JSON
// format (docs/json.md).
//
// The analysis runs in stages, each with its inputs and outputs:
//
//  1. Collect (collect.go, names.go, nvtxnames.go, devices.go): one pass
//     streams every table of the Source, in parallel, into a collector of
//     compact records (calls, GPU work, migrations, faults, NVTX ranges,
//     each carrying its pid) and, through taps on the same batches, the
//     per-device, per-process and memory figures and a job's collectives.
//  2. Split (procsplit.go, file.go), only with Options.SplitProcesses and
//     several CUDA processes: each process's collector is derived from the
//     whole file's (its share of the records, not a second read) and
//     analyzed first, two at a time;
//     each hands the whole file's analysis its merged GPU work, writes its
//     calls' annotations into the file's calls (annotate) and gives back
//     its fault-driven activity, which the whole analysis would compute
//     again.
//  3. Analyze (analyze.go; analysis.run lists the phases): start-up calls,
//     per-API tables, sorting, span, steps, fault-driven union, stalls,
//     waits, episodes, statistics, UM summary, step rows, timeline,
//     verdict, devices, sanitizer findings. Phases that touch disjoint
//     parts of the analysis run concurrently.
//  4. Output (file.go): the File holds the whole file's Result, each
//     process's Result, the collectives (analyze/multirank reads them to
//     analyze a job) and, with Options.SyncSamples, the host-blocking
//     calls' durations (analyze/compare tests them).
//
// Sorting and container machinery lives in internal packages with tests of
// their own: analyze/internal/radix (the radix sorts), analyze/internal/chunks
// (the append-only lists records are collected in),
// analyze/internal/cache (per-row caches of dictionary entries and
// processes) and analyze/internal/intern (the name tables).
package analyze
