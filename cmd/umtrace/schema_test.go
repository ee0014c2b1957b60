package main

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/umtrace/umtrace/ingest/testshared"
)

// schemaFor maps a committed JSON golden (slash path from the repository
// root) to the schema under docs/schema it must satisfy; "" for a JSON
// file umtrace reads rather than writes.
func schemaFor(rel string) (string, bool) {
	dir, base := filepath.Dir(rel), filepath.Base(rel)
	switch {
	case rel == "cmd/umtrace/testdata/gate/loose.json":
		return "", true // a gate thresholds file: input
	case dir == "cmd/umtrace/testdata/analyze":
		return "analyze.schema.json", true
	case dir == "cmd/umtrace/testdata/diff":
		return "diff.schema.json", true
	case dir == "cmd/umtrace/testdata/gate":
		return "gate.schema.json", true
	case dir == "cmd/umtrace/testdata/batch":
		return "batch-summary.schema.json", true
	case dir == "cmd/umtrace/testdata/sanitizer":
		return "sanitizer.schema.json", true
	case strings.HasPrefix(dir, "testdata/reproducer") && strings.HasSuffix(base, ".report.json"):
		return "analyze.schema.json", true
	case strings.HasPrefix(dir, "testdata/reproducer") && strings.HasSuffix(base, ".steps.json"):
		return "reproducer-steps.schema.json", true
	}
	return "", false
}

// repoRoot is the repository root (cmd/umtrace's tests run in cmd/umtrace).
var repoRoot = filepath.Join("..", "..")

func compileSchemas(t *testing.T) map[string]*jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	out := map[string]*jsonschema.Schema{}
	paths, _ := filepath.Glob(filepath.Join(repoRoot, "docs", "schema", "*.schema.json"))
	if len(paths) == 0 {
		t.Fatal("no schemas under docs/schema")
	}
	for _, p := range paths {
		abs, _ := filepath.Abs(p)
		s, err := c.Compile(abs)
		if err != nil {
			t.Fatalf("compile %s: %v", p, err)
		}
		out[filepath.Base(p)] = s
	}
	return out
}

func validateJSON(t *testing.T, s *jsonschema.Schema, name string, data []byte) {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Errorf("%s: not JSON: %v", name, err)
		return
	}
	if err := s.Validate(inst); err != nil {
		msg := err.Error()
		if len(msg) > 3000 {
			msg = msg[:3000] + "…"
		}
		t.Errorf("%s does not match its schema: %s", name, msg)
	}
}

// TestJSONGoldensMatchSchemas validates every committed JSON file under
// the repository's testdata directories against its schema (docs/schema,
// docs/json.md); a JSON golden this test cannot place fails it, so a new
// kind of document gets a schema.
func TestJSONGoldensMatchSchemas(t *testing.T) {
	schemas := compileSchemas(t)
	n := 0
	for _, top := range []string{"cmd/umtrace/testdata", "testdata"} {
		err := filepath.WalkDir(filepath.Join(repoRoot, top), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".json") {
				return err
			}
			rel, _ := filepath.Rel(repoRoot, p)
			rel = filepath.ToSlash(rel)
			schema, ok := schemaFor(rel)
			if !ok {
				t.Errorf("%s: no schema for this JSON file (add it to schemaFor)", rel)
				return nil
			}
			if schema == "" {
				return nil
			}
			s := schemas[schema]
			if s == nil {
				t.Errorf("%s: schema %s missing", rel, schema)
				return nil
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			validateJSON(t, s, rel, data)
			n++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if n < 20 {
		t.Errorf("validated only %d JSON goldens", n)
	}
}

// TestRedactReportMatchesSchema: redact --report's JSON (no golden: its
// counts depend on the trace copy) matches its schema.
func TestRedactReportMatchesSchema(t *testing.T) {
	schemas := compileSchemas(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.sqlite")
	src, err := os.ReadFile(testshared.Testdata("traces", "um_pingpong_prefetch.sqlite"))
	if err != nil {
		t.Skip(err)
	}
	if err := os.WriteFile(in, src, 0o644); err != nil {
		t.Fatal(err)
	}
	rep := filepath.Join(dir, "report.json")
	var so, se bytes.Buffer
	if code := run(&so, &se, []string{"redact", in, filepath.Join(dir, "out.sqlite"), "--report=" + rep, "-q"}); code != exitOK {
		t.Fatalf("redact: exit %d: %s", code, se.String())
	}
	data, err := os.ReadFile(rep)
	if err != nil {
		t.Fatal(err)
	}
	validateJSON(t, schemas["redact-report.schema.json"], "redact --report", data)
}

// TestSchemasReject: the analyze schema is not {}: a schema-1 document
// (no kind, no files), an unknown verdict and an episode without its
// rank fail it.
func TestSchemasReject(t *testing.T) {
	s := compileSchemas(t)["analyze.schema.json"]
	data, err := os.ReadFile(filepath.Join("testdata", "analyze", "um_pingpong_default.json"))
	if err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func(m map[string]any){
		"schema 1":       func(m map[string]any) { delete(m, "kind"); delete(m, "files"); m["schema_version"] = 1 },
		"verdict":        func(m map[string]any) { m["verdict"] = "STORM" },
		"episode rank":   func(m map[string]any) { delete(m["episodes"].([]any)[0].(map[string]any), "rank") },
		"unknown field":  func(m map[string]any) { m["extra"] = true },
		"job as a trace": func(m map[string]any) { m["kind"] = "job" },
	} {
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		edit(inst.(map[string]any))
		if s.Validate(inst) == nil {
			t.Errorf("%s: the schema accepts it", name)
		}
	}
}

// TestAnalyzeDocumentsShareTheCore: the analyze documents of a trace, a
// one-file job, a two-file job and separate traces all list the storm
// episodes at the top level, each placed by file, rank and pid as the
// job's rank table has them, and the story's first change is the first
// mitigation.
func TestAnalyzeDocumentsShareTheCore(t *testing.T) {
	type doc struct {
		Kind     string `json:"kind"`
		Verdict  string `json:"verdict"`
		Episodes []struct {
			File string `json:"file"`
			Rank int    `json:"rank"`
			Pid  int64  `json:"pid"`
		} `json:"episodes"`
		Mitigations []struct {
			ID string `json:"id"`
		} `json:"mitigations"`
		Story struct {
			FirstChange string `json:"first_change"`
		} `json:"story"`
		Ranks []struct {
			Rank int    `json:"rank"`
			File string `json:"file"`
			Pid  int64  `json:"pid"`
		} `json:"ranks"`
		Results []json.RawMessage `json:"results"`
	}
	for name, kind := range map[string]string{"um_pingpong_default": "trace", "job_multi_process": "job", "job_multi_gpu": "job", "separate_pingpong": "separate"} {
		data, err := os.ReadFile(filepath.Join("testdata", "analyze", name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var d doc
		if err := json.Unmarshal(data, &d); err != nil {
			t.Fatal(err)
		}
		if d.Kind != kind || d.Verdict != "storm" || len(d.Episodes) == 0 {
			t.Errorf("%s: kind %q verdict %q, %d episodes", name, d.Kind, d.Verdict, len(d.Episodes))
		}
		if len(d.Mitigations) == 0 || d.Story.FirstChange != d.Mitigations[0].ID {
			t.Errorf("%s: first change %q, mitigations %v", name, d.Story.FirstChange, d.Mitigations)
		}
		if kind == "trace" {
			if len(d.Results) != 0 {
				t.Errorf("%s: a trace document has results", name)
			}
			continue
		}
		if len(d.Results) < 2 {
			t.Errorf("%s: %d results", name, len(d.Results))
		}
		for _, e := range d.Episodes {
			if e.File == "" {
				t.Errorf("%s: episode without file", name)
			}
			if kind != "job" {
				continue
			}
			found := false
			for _, r := range d.Ranks {
				found = found || r.Rank == e.Rank && r.File == e.File && r.Pid == e.Pid
			}
			if !found {
				t.Errorf("%s: episode %+v is on no rank of the table", name, e)
			}
		}
	}
}

// TestSynthTruthMatchesSchema: synth's truth files (one trace, a one-file
// job, rank files) match synth-truth.schema.json.
func TestSynthTruthMatchesSchema(t *testing.T) {
	s := compileSchemas(t)["synth-truth.schema.json"]
	dir := t.TempDir()
	one := filepath.Join(dir, "one.sqlite")
	if code, _, errs := runSynth(t, one, "--steps", "30", "--kernels-per-step", "2", "--episodes", "1", "--episode-steps", "3", "--decoys", "1", "--decoy-steps", "2", "-q"); code != exitOK {
		t.Fatalf("synth: exit %d: %s", code, errs)
	}
	job := []string{"--ranks", "2", "--storm-rank", "1", "--steps", "30", "--episodes", "1", "--episode-steps", "4", "--decoys", "0", "-q"}
	if code, _, errs := runSynth(t, append([]string{filepath.Join(dir, "job.sqlite"), "--one-file"}, job...)...); code != exitOK {
		t.Fatalf("synth --one-file: exit %d: %s", code, errs)
	}
	if code, _, errs := runSynth(t, append([]string{filepath.Join(dir, "ranks")}, job...)...); code != exitOK {
		t.Fatalf("synth --ranks: exit %d: %s", code, errs)
	}
	var truths []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".truth.json") {
			truths = append(truths, p)
		}
		return nil
	})
	if len(truths) < 3 {
		t.Fatalf("truth files %v", truths)
	}
	for _, p := range truths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		validateJSON(t, s, filepath.Base(p), data)
	}
}
