package main

// batch --merge: joins the summaries of a sharded batch (--shard I/N,
// one output directory per task or one shared by all) into the summary
// an unsharded batch over the same inputs writes, byte for byte, and
// copies the shards' per-trace reports into --out-dir.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/umtrace/umtrace/analyze"
	"github.com/umtrace/umtrace/cmd/umtrace/internal/batch"
	"github.com/umtrace/umtrace/report"
)

// manifestSchemaVersion is the schema_version of a shard manifest.
const manifestSchemaVersion = 1

// shardManifest is OUT/summary-shard-I-of-N.manifest.json, written by a
// sharded batch beside its summary: what batch --merge needs to tell
// that shards belong to one run (same inputs, options and version) and
// that no shard lost rows.
type shardManifest struct {
	SchemaVersion  int    `json:"schema_version"`
	Shard          string `json:"shard"`         // I/N
	Inputs         int    `json:"inputs"`        // inputs of the whole run, every shard's
	InputsSHA256   string `json:"inputs_sha256"` // of the sorted input paths and their trace ids
	ShardInputs    int    `json:"shard_inputs"`  // inputs this shard analyzed
	Unmatched      int    `json:"unmatched"`     // arguments that matched nothing (shard 1 reports them)
	OptionsSHA256  string `json:"options_sha256"`
	UmtraceVersion string `json:"umtrace_version"`
}

// writeShardManifest writes base.manifest.json for a sharded batch.
func writeShardManifest(base string, in inputs, opts analyze.Options, salvage bool) error {
	paths := make([]string, 0, len(in.ids))
	for p := range in.ids {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	h := sha256.New()
	for _, p := range paths {
		fmt.Fprintf(h, "%s\x00%s\n", p, in.ids[p])
	}
	o, err := json.Marshal(struct {
		Analyze analyze.Options
		Salvage bool
	}{opts, salvage})
	if err != nil {
		return err
	}
	oh := sha256.Sum256(o)
	m := shardManifest{
		SchemaVersion: manifestSchemaVersion, Shard: in.shard.String(),
		Inputs: len(paths), InputsSHA256: hex.EncodeToString(h.Sum(nil)),
		ShardInputs: len(in.paths), Unmatched: len(in.missing),
		OptionsSHA256: hex.EncodeToString(oh[:]), UmtraceVersion: Version,
	}
	var buf bytes.Buffer
	if err := report.EncodeJSON(&buf, m); err != nil {
		return err
	}
	return batch.WriteFileAtomic(base+".manifest.json", buf.Bytes())
}

// shardSummaryRE matches a shard's summary file name.
var shardSummaryRE = regexp.MustCompile(`^summary-shard-([0-9]+)-of-([0-9]+)\.parquet$`)

// shardOut is one shard's output found by batch --merge.
type shardOut struct {
	dir      string // its output directory
	base     string // dir/summary-shard-I-of-N
	shard    batch.Shard
	manifest *shardManifest // nil: none (a umtrace before manifests)
	rows     []report.SummaryRow
}

// mergeFlags are the flags batch --merge takes; any other is a usage error.
var mergeFlags = map[string]bool{"merge": true, "out-dir": true, "out": true, "output": true, "format": true, "quiet": true}

// cmdBatchMerge is batch --merge DIR...: fs is parsed, out and outDir
// are batch's -o/-f and --out-dir.
func cmdBatchMerge(stdout, stderr io.Writer, fs *pflag.FlagSet, out *output, outDir func() (string, error), quiet bool) error {
	var bad []string
	fs.Visit(func(f *pflag.Flag) {
		if !mergeFlags[f.Name] {
			bad = append(bad, "--"+f.Name)
		}
	})
	if len(bad) > 0 {
		return usageErr("--merge joins the outputs of a finished sharded batch; it takes --out-dir, -o, -f and -q, not %s", strings.Join(bad, ", "))
	}
	if fs.NArg() == 0 {
		return usageErr("--merge wants the shards' output directories (usage: umtrace batch --merge DIR... --out-dir OUT)")
	}
	dir, err := outDir()
	if err != nil {
		return err
	}
	format, err := out.resolve()
	if err != nil {
		return err
	}
	shards, err := findShards(fs.Args())
	if err != nil {
		return badInput(err)
	}
	var rows []report.SummaryRow
	for _, s := range shards {
		rows = append(rows, s.rows...)
	}
	if err := checkShards(shards); err != nil {
		return badInput(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, batch.TracesDir), 0o755); err != nil {
		return internal(fmt.Errorf("create output directory: %w", err))
	}
	copied := 0
	for _, s := range shards {
		n, err := copyTraceReports(s, dir)
		if err != nil {
			return err
		}
		copied += n
	}
	report.SortSummaryRows(rows)

	// The summary as an unsharded batch writes it (batch.go).
	base := filepath.Join(dir, summaryBase(batch.Shard{}))
	title := "umtrace batch summary"
	summaryOut, err := writeSummary(base, title, rows, format)
	if err != nil {
		return err
	}
	nFailed := 0
	for _, r := range rows {
		if r.Verdict == report.VerdictError {
			nFailed++
		}
	}
	if !quiet {
		fmt.Fprintf(stderr, "batch: merged %d shards: %d traces (%d failed), %d per-trace files copied; summary in %s.{md,html,json,csv,parquet}\n",
			len(shards), len(rows), nFailed, copied, base)
	}
	if err := out.write(stdout, summaryOut); err != nil {
		return err
	}
	if nFailed > 0 {
		return badInput(fmt.Errorf("%d of %d inputs failed (listed in %s.md)", nFailed, len(rows), base))
	}
	return nil
}

// findShards reads every shard summary (summary-shard-I-of-N.parquet, and
// its manifest) in the directories dirs, sorted by shard index. It
// checks that they are the N shards of one run: one N, every index once.
func findShards(dirs []string) ([]*shardOut, error) {
	seenDir := map[string]bool{}
	var shards []*shardOut
	for _, d := range dirs {
		d = filepath.Clean(d)
		if seenDir[d] {
			continue
		}
		seenDir[d] = true
		ents, err := os.ReadDir(d)
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return nil, fmt.Errorf("%s: %v (want a shard's --out-dir)", d, err)
		}
		found := 0
		for _, e := range ents {
			m := shardSummaryRE.FindStringSubmatch(e.Name())
			if m == nil || !e.Type().IsRegular() {
				continue
			}
			i, err1 := strconv.Atoi(m[1])
			n, err2 := strconv.Atoi(m[2])
			if err1 != nil || err2 != nil || i < 1 || i > n {
				return nil, fmt.Errorf("%s: not a shard summary name (want summary-shard-I-of-N with 1 ≤ I ≤ N)", filepath.Join(d, e.Name()))
			}
			found++
			shards = append(shards, &shardOut{dir: d, base: filepath.Join(d, strings.TrimSuffix(e.Name(), ".parquet")), shard: batch.Shard{Index: i, Count: n}})
		}
		if found == 0 {
			return nil, fmt.Errorf("%s: no shard summaries (summary-shard-I-of-N.parquet, written by batch --shard I/N)", d)
		}
	}
	// One run: one N.
	byN := map[int][]string{}
	var ns []int
	for _, s := range shards {
		if byN[s.shard.Count] == nil {
			ns = append(ns, s.shard.Count)
		}
		byN[s.shard.Count] = append(byN[s.shard.Count], s.base+".parquet")
	}
	if len(ns) > 1 {
		sort.Ints(ns)
		var parts []string
		for _, n := range ns {
			parts = append(parts, fmt.Sprintf("of %d: %s", n, strings.Join(byN[n], ", ")))
		}
		return nil, fmt.Errorf("shards of different runs (N differs): %s", strings.Join(parts, "; "))
	}
	n := ns[0]
	sort.SliceStable(shards, func(i, j int) bool { return shards[i].shard.Index < shards[j].shard.Index })
	where := map[int][]string{}
	for _, s := range shards {
		where[s.shard.Index] = append(where[s.shard.Index], s.base+".parquet")
	}
	var missing, dup []string
	for i := 1; i <= n; i++ {
		switch len(where[i]) {
		case 0:
			missing = append(missing, fmt.Sprintf("%d/%d", i, n))
		case 1:
		default:
			dup = append(dup, fmt.Sprintf("%d/%d (%s)", i, n, strings.Join(where[i], ", ")))
		}
	}
	var probs []string
	if len(missing) > 0 {
		probs = append(probs, fmt.Sprintf("%d of %d shards missing: %s (not in %s)", len(missing), n, strings.Join(missing, ", "), strings.Join(dirs, ", ")))
	}
	if len(dup) > 0 {
		probs = append(probs, fmt.Sprintf("shards found twice: %s", strings.Join(dup, "; ")))
	}
	if len(probs) > 0 {
		return nil, errors.New(strings.Join(probs, "; "))
	}
	for _, s := range shards {
		f, err := os.Open(s.base + ".parquet")
		if err != nil {
			return nil, err
		}
		s.rows, err = report.ReadSummaryParquet(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s.parquet: %v", s.base, err)
		}
		data, err := os.ReadFile(s.base + ".manifest.json")
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return nil, err
		default:
			s.manifest = &shardManifest{}
			if err := json.Unmarshal(data, s.manifest); err != nil || s.manifest.SchemaVersion != manifestSchemaVersion {
				return nil, fmt.Errorf("%s.manifest.json: not a shard manifest of schema version %d", s.base, manifestSchemaVersion)
			}
			if s.manifest.Shard != s.shard.String() {
				return nil, fmt.Errorf("%s.manifest.json names shard %s", s.base, s.manifest.Shard)
			}
		}
	}
	return shards, nil
}

// checkShards checks that the shards (every index once) are of one run:
// every trace in one shard only; where manifests are present, the same
// inputs, options and umtrace version, and every input's row present.
func checkShards(shards []*shardOut) error {
	owner := map[string]*shardOut{}
	for _, s := range shards {
		for _, r := range s.rows {
			if o := owner[r.Trace]; o != nil {
				return fmt.Errorf("trace %s is in shard %s (%s) and shard %s (%s): not shards of one run", r.Trace, o.shard, o.dir, s.shard, s.dir)
			}
			owner[r.Trace] = s
		}
	}
	first := shards[0]
	for _, s := range shards {
		if (s.manifest == nil) != (first.manifest == nil) {
			with, without := s, first
			if s.manifest == nil {
				with, without = first, s
			}
			return fmt.Errorf("shard %s (%s) has no %s.manifest.json, shard %s (%s) has one: a shard cut short, or of another umtrace (rerun it)", without.shard, without.dir, filepath.Base(without.base), with.shard, with.dir)
		}
		m, f := s.manifest, first.manifest
		if m == nil {
			continue
		}
		switch {
		case m.UmtraceVersion != f.UmtraceVersion:
			return fmt.Errorf("shard %s ran umtrace %s, shard %s umtrace %s: not shards of one run", f.Shard, f.UmtraceVersion, m.Shard, m.UmtraceVersion)
		case m.InputsSHA256 != f.InputsSHA256 || m.Inputs != f.Inputs:
			return fmt.Errorf("shard %s (%s) saw other inputs (%d) than shard %s (%s, %d): not shards of one run (same arguments, same working directory)", m.Shard, s.dir, m.Inputs, f.Shard, first.dir, f.Inputs)
		case m.OptionsSHA256 != f.OptionsSHA256:
			return fmt.Errorf("shard %s (%s) ran with other analysis options than shard %s (%s): not shards of one run", m.Shard, s.dir, f.Shard, first.dir)
		case len(s.rows) != m.ShardInputs+m.Unmatched:
			return fmt.Errorf("%s.parquet has %d rows, its manifest %d inputs and %d unmatched arguments: an incomplete shard (rerun it)", s.base, len(s.rows), m.ShardInputs, m.Unmatched)
		}
	}
	if first.manifest != nil {
		total := 0
		for _, s := range shards {
			total += s.manifest.ShardInputs
		}
		if total != first.manifest.Inputs {
			return fmt.Errorf("the shards analyzed %d inputs of %d", total, first.manifest.Inputs)
		}
	}
	return nil
}

// copyTraceReports copies the per-trace files of s's analyzed traces
// (OUT/traces/<id>.cache.json and the reports it lists) into dir/traces,
// unless s wrote into dir itself. It returns how many files it copied.
func copyTraceReports(s *shardOut, dir string) (int, error) {
	src, dst := filepath.Join(s.dir, batch.TracesDir), filepath.Join(dir, batch.TracesDir)
	if a, err := os.Stat(src); err == nil {
		if b, err := os.Stat(dst); err == nil && os.SameFile(a, b) {
			return 0, nil
		}
	}
	n := 0
	for _, r := range s.rows {
		if r.Verdict == report.VerdictError {
			continue
		}
		rec := r.Trace + ".cache.json"
		data, err := os.ReadFile(filepath.Join(src, rec))
		if err != nil {
			return n, badInput(fmt.Errorf("shard %s: %v: its per-trace files are incomplete (rerun the shard)", s.shard, err))
		}
		var cr struct {
			Reports []string `json:"reports"`
		}
		if err := json.Unmarshal(data, &cr); err != nil {
			return n, badInput(fmt.Errorf("shard %s: %s: %v", s.shard, filepath.Join(src, rec), err))
		}
		for _, name := range cr.Reports {
			if filepath.Base(name) != name {
				return n, badInput(fmt.Errorf("shard %s: %s lists %q, not a file name", s.shard, filepath.Join(src, rec), name))
			}
			b, err := os.ReadFile(filepath.Join(src, name))
			if err != nil {
				return n, badInput(fmt.Errorf("shard %s: %v: its per-trace files are incomplete (rerun the shard)", s.shard, err))
			}
			if err := batch.WriteFileAtomic(filepath.Join(dst, name), b); err != nil {
				return n, internal(err)
			}
			n++
		}
		// The cache record last, so a copy cut short is re-analyzed, not trusted.
		if err := batch.WriteFileAtomic(filepath.Join(dst, rec), data); err != nil {
			return n, internal(err)
		}
		n++
	}
	return n, nil
}
