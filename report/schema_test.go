package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/umtrace/umtrace/analyze"
	"github.com/umtrace/umtrace/reproducer"
	"github.com/umtrace/umtrace/synth"
)

// The JSON Schemas under docs/schema are generated from the Go types of
// the documents (the fields the encoder writes: names, types, which are
// always present) plus the enumerations below, and committed. This test
// regenerates them and fails when a committed schema differs, so a field
// added to a document without its schema fails here; -update-schema
// rewrites them. cmd/umtrace's TestJSONGoldensMatchSchemas validates every
// committed JSON golden against them.

var updateSchema = flag.Bool("update-schema", false, "rewrite docs/schema/*.schema.json from the document types")

var schemaDir = filepath.Join("..", "docs", "schema")

var verdicts = []any{analyze.VerdictStorm, analyze.VerdictNoStorm, analyze.VerdictInsufficient}

// schemaEnums constrains fields beyond their type: "Def.key" → the
// values the field takes (a one-value list is a const).
var schemaEnums = map[string][]any{
	"report_TraceDocument.schema_version":    {analyze.SchemaVersion},
	"report_TraceDocument.kind":              {KindTrace},
	"report_TraceDocument.verdict":           verdicts,
	"report_JobDocument.schema_version":      {analyze.SchemaVersion},
	"report_JobDocument.kind":                {KindJob},
	"report_JobDocument.verdict":             verdicts,
	"report_JobDocument.collective_source":   {"nccl kernels", "nvtx ranges", "none"},
	"report_SeparateDocument.schema_version": {analyze.SchemaVersion},
	"report_SeparateDocument.kind":           {KindSeparate},
	"report_SeparateDocument.verdict":        verdicts,
	"multirank_Rank.verdict":                 verdicts,
	"analyze_APIStats.kind":                  {"explicit", "implicit"},
	"analyze_MigrationAgg.direction":         {"HtoD", "DtoH", "DtoD"},
	"analyze_MigrationAgg.cause":             {"user_prefetch", "page_fault", "speculative_prefetch", "eviction", "access_counters", "unknown", "not_recorded"},
	"analyze_UM.gpu_fault_collection":        {"on", "off", "unknown"},
	"analyze_UM.cpu_fault_collection":        {"on", "off", "unknown"},
	"analyze_Steps.confidence":               {"high", "medium", "low", "given", ""},

	"report_DiffDocument.schema_version": {JSONSchemaVersion},
	"report_DiffDocument.overall":        {"improvement", "regression", "mixed", "no significant change"},
	"compare_Row.unit":                   {"ns", "share", "count", "bytes", "per_sec"},
	"compare_Row.test":                   {"mann_whitney_u", "harrell_davis", "none"},
	"compare_Row.verdict":                {"improved", "regressed", "unchanged", "untested", "n/a"},

	"report_GateDocument.schema_version": {GateJSONSchemaVersion},
	"report_GateDocument.status":         {"PASS", "FAIL", "UNKNOWN", "ERROR"},
	"report_gateCheckJSON.metric":        {"fault-rate", "fault-latency-per-page", "storm-share", "sync-p99"},
	"report_gateCheckJSON.kind":          {"limit", "baseline"},
	"report_gateCheckJSON.unit":          {"faults/s", "ns", "share"},
	"report_gateCheckJSON.status":        {"pass", "fail", "unknown"},

	"report_SummaryDocument.schema_version": {JSONSchemaVersion},
	"report_SummaryRow.verdict":             append(append([]any{}, verdicts...), VerdictError),

	"report_SanitizerDocument.schema_version": {JSONSchemaVersion},
	"report_Redact.schema_version":            {JSONSchemaVersion},

	"synth_Truth.verdict": {analyze.VerdictStorm, analyze.VerdictNoStorm},
	"synth_Span.kind":     {"storm", "long_kernel", "prefetch_burst", "sync_burst"},
}

// openDefs may hold fields this schema does not list yet (another branch
// adds fields under steps).
var openDefs = map[string]bool{"analyze_Steps": true}

// schemaFiles are the committed schemas: file → root type and title.
var schemaFiles = []struct {
	file, title, about string
	roots              []reflect.Type
	nullLists          bool // written by encoding/json: a nil list or map is null
}{
	{"analyze.schema.json", "umtrace analyze JSON document", "umtrace analyze -f json: kind trace (one trace), job (the ranks of one job) or separate (traces analyzed alone); docs/json.md",
		[]reflect.Type{reflect.TypeFor[TraceDocument](), reflect.TypeFor[JobDocument](), reflect.TypeFor[SeparateDocument]()}, false},
	{"diff.schema.json", "umtrace diff JSON document", "umtrace diff -f json; docs/json.md", []reflect.Type{reflect.TypeFor[DiffDocument]()}, false},
	{"gate.schema.json", "umtrace gate JSON document", "umtrace gate -f json; docs/json.md, docs/gate.md", []reflect.Type{reflect.TypeFor[GateDocument]()}, false},
	{"batch-summary.schema.json", "umtrace batch summary.json", "umtrace batch: summary.json (and batch -f json); docs/json.md", []reflect.Type{reflect.TypeFor[SummaryDocument]()}, false},
	{"sanitizer.schema.json", "umtrace sanitizer JSON document", "umtrace sanitizer -f json; docs/json.md, docs/sanitizer.md", []reflect.Type{reflect.TypeFor[SanitizerDocument]()}, false},
	{"reproducer-steps.schema.json", "umtrace reproduce: a scenario run's steps.json", "what a reproduce child run measured, written beside its trace (SCENARIO.steps.json, SCENARIO.rankN.steps.json); docs/reproducer.md", []reflect.Type{reflect.TypeFor[reproducer.Result]()}, true},
	{"synth-truth.schema.json", "umtrace synth: a synthetic trace's truth", "what umtrace synth planted: TRACE.truth.json (one trace, or one file of several processes with --ranks --one-file: the job truth) and job.truth.json (rank files); docs/synth.md",
		[]reflect.Type{reflect.TypeFor[synth.Truth](), reflect.TypeFor[synth.JobTruth]()}, true},
	{"redact-report.schema.json", "umtrace redact --report JSON document", "umtrace redact --report FILE.json; docs/json.md", []reflect.Type{reflect.TypeFor[Redact]()}, false},
}

type schemaGen struct {
	nullLists bool
	defs      map[string]any
	used      map[string]bool // enum keys used
}

func defName(t reflect.Type) string { return path.Base(t.PkgPath()) + "_" + t.Name() }

// of is the schema of values of type t.
func (g *schemaGen) of(t reflect.Type) map[string]any {
	switch t.Kind() {
	case reflect.Pointer:
		return g.of(t.Elem())
	case reflect.Struct:
		if t == reflect.TypeFor[time.Time]() {
			return map[string]any{"type": "string", "format": "date-time"}
		}
		if t.Name() == "" {
			return g.object(t, "")
		}
		n := defName(t)
		if _, ok := g.defs[n]; !ok {
			g.defs[n] = nil // placeholder against recursion
			g.defs[n] = g.object(t, n)
		}
		return map[string]any{"$ref": "#/$defs/" + n}
	case reflect.Slice, reflect.Array:
		if g.nullLists && t.Kind() == reflect.Slice {
			return map[string]any{"type": []any{"array", "null"}, "items": g.of(t.Elem())}
		}
		return map[string]any{"type": "array", "items": g.of(t.Elem())}
	case reflect.Map:
		if g.nullLists {
			return map[string]any{"type": []any{"object", "null"}, "additionalProperties": g.of(t.Elem())}
		}
		return map[string]any{"type": "object", "additionalProperties": g.of(t.Elem())}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	}
	return map[string]any{}
}

// object is the schema of struct t (def name n, "" when anonymous): the
// fields the encoder writes, those without omitempty required, a pointer
// without omitempty nullable.
func (g *schemaGen) object(t reflect.Type, n string) map[string]any {
	props := map[string]any{}
	required := []string{}
	for _, f := range fields(t) {
		ft := t.FieldByIndex(f.index).Type
		s := g.of(ft)
		if e, ok := schemaEnums[n+"."+f.name]; ok {
			g.used[n+"."+f.name] = true
			if len(e) == 1 {
				s = map[string]any{"const": e[0]}
			} else {
				s = map[string]any{"enum": e}
			}
		}
		if ft.Kind() == reflect.Pointer && !f.omitEmpty {
			s = map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
		}
		props[f.name] = s
		if !f.omitEmpty {
			required = append(required, f.name)
		}
	}
	o := map[string]any{"type": "object", "properties": props, "required": required}
	if !openDefs[n] {
		o["additionalProperties"] = false
	}
	return o
}

// generate returns each schema file's bytes.
func generateSchemas(t *testing.T) map[string][]byte {
	out := map[string][]byte{}
	used := map[string]bool{}
	for _, sf := range schemaFiles {
		g := &schemaGen{nullLists: sf.nullLists, defs: map[string]any{}, used: used}
		root := map[string]any{
			"$schema":     "https://json-schema.org/draft/2020-12/schema",
			"$id":         "https://github.com/umtrace/umtrace/docs/schema/" + sf.file,
			"title":       sf.title,
			"description": sf.about + ". Generated from the document types by report/schema_test.go (go test ./report -run Schema -update-schema).",
		}
		if len(sf.roots) == 1 {
			for k, v := range g.of(sf.roots[0]) {
				root[k] = v
			}
		} else {
			var one []any
			for _, r := range sf.roots {
				one = append(one, g.of(r))
			}
			root["oneOf"] = one
		}
		root["$defs"] = g.defs
		var b bytes.Buffer
		if err := EncodeJSON(&b, root); err != nil {
			t.Fatal(err)
		}
		out[sf.file] = b.Bytes()
	}
	for k := range schemaEnums {
		if !used[k] {
			t.Errorf("schemaEnums[%q] names no field of a document", k)
		}
	}
	return out
}

func TestSchemasUpToDate(t *testing.T) {
	for file, b := range generateSchemas(t) {
		p := filepath.Join(schemaDir, file)
		if *updateSchema {
			if err := os.MkdirAll(schemaDir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		old, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(old, b) {
			t.Errorf("%s is not what the document types give (go test ./report -run Schema -update-schema): %v", p, err)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Errorf("%s: %v", file, err)
		}
		if strings.Contains(string(b), `"$ref": "#/$defs/report_"`) {
			t.Errorf("%s: unnamed ref", file)
		}
	}
}
