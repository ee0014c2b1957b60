package reproducer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// NsysProfileArgs are the nsys profile flags every recording uses.
var NsysProfileArgs = []string{
	"profile",
	"--trace=cuda,nvtx,osrt",
	"--cuda-um-cpu-page-faults=true",
	"--cuda-um-gpu-page-faults=true",
	"--cuda-memory-usage=true",
	"--force-overwrite=true",
}

// StepsFile is where a child run writes its Result, next to the trace.
func StepsFile(outDir, scenario string) string {
	return filepath.Join(outDir, scenario+".steps.json")
}

// WriteResult saves r as JSON in outDir.
func WriteResult(outDir string, r *Result) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(StepsFile(outDir, r.Scenario), append(b, '\n'), 0o644)
}

// ReadResult loads what a child run saved.
func ReadResult(outDir, scenario string) (*Result, error) {
	b, err := os.ReadFile(StepsFile(outDir, scenario))
	if err != nil {
		return nil, err
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", StepsFile(outDir, scenario), err)
	}
	return &r, nil
}

// Record runs exe with args under nsys, then exports the report to
// outDir/base.sqlite and returns that path. Output of both goes to log.
func Record(nsys, exe string, args []string, outDir, base string, log io.Writer) (string, error) {
	rep := filepath.Join(outDir, base)
	pargs := append(append(append([]string{}, NsysProfileArgs...), "-o", rep, exe), args...)
	cmd := exec.Command(nsys, pargs...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("nsys profile %s: %w", base, err)
	}
	if _, err := os.Stat(rep + ".nsys-rep"); err != nil {
		return "", fmt.Errorf("nsys profile %s made no report (is libdw.so.1 on LD_LIBRARY_PATH?): %w", base, err)
	}
	sqlite := rep + ".sqlite"
	cmd = exec.Command(nsys, "export", "--type", "sqlite", "--force-overwrite=true", "-o", sqlite, rep+".nsys-rep")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("nsys export %s: %w", base, err)
	}
	return sqlite, nil
}

// Sanitizers are the compute-sanitizer tools --sanitizer accepts.
var Sanitizers = []string{"racecheck", "memcheck"}

// SanitizerReport is what a compute-sanitizer run left.
type SanitizerReport struct {
	Tool    string
	Text    string // path of the text log
	XML     string // path of the XML log
	Summary string // the tool's summary line, e.g. "RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)"
}

var summaryRE = regexp.MustCompile(`(?m)^=+ ((?:RACECHECK|ERROR|LEAK) SUMMARY: .*)$`)

// Sanitize runs exe with args under compute-sanitizer's tool twice: once
// for the text log (outDir/base.TOOL.txt), once for the XML log
// (outDir/base.TOOL.xml, via --xml --save).
func Sanitize(sanitizer, tool, exe string, args []string, outDir, base string, log io.Writer) (*SanitizerReport, error) {
	if sanitizer == "" {
		p, err := exec.LookPath("compute-sanitizer")
		if err != nil {
			for _, c := range []string{"/usr/local/cuda/bin/compute-sanitizer", "/usr/local/cuda/compute-sanitizer/compute-sanitizer"} {
				if _, e := os.Stat(c); e == nil {
					p, err = c, nil
					break
				}
			}
		}
		if err != nil {
			return nil, errors.New("compute-sanitizer not found on PATH or in /usr/local/cuda/bin")
		}
		sanitizer = p
	}
	rep := &SanitizerReport{Tool: tool,
		Text: filepath.Join(outDir, base+"."+tool+".txt"),
		XML:  filepath.Join(outDir, base+"."+tool+".xml")}
	var text bytes.Buffer
	cmd := exec.Command(sanitizer, append([]string{"--tool", tool, "--print-limit", "100"}, append([]string{exe}, args...)...)...)
	cmd.Stdout = io.MultiWriter(&text, log)
	cmd.Stderr = cmd.Stdout
	runErr := cmd.Run()
	if err := os.WriteFile(rep.Text, text.Bytes(), 0o644); err != nil {
		return nil, err
	}
	if runErr != nil {
		var ee *exec.ExitError
		if !errors.As(runErr, &ee) {
			return nil, fmt.Errorf("compute-sanitizer --tool %s: %w", tool, runErr)
		}
	}
	if m := summaryRE.FindSubmatch(text.Bytes()); m != nil {
		rep.Summary = string(m[1])
	}
	cmd = exec.Command(sanitizer, append([]string{"--tool", tool, "--xml", "--save", rep.XML}, append([]string{exe}, args...)...)...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return nil, fmt.Errorf("compute-sanitizer --tool %s --xml: %w", tool, err)
		}
	}
	if _, err := os.Stat(rep.XML); err != nil {
		return nil, fmt.Errorf("compute-sanitizer --xml --save wrote no log: %w", err)
	}
	if rep.Summary == "" {
		rep.Summary = strings.TrimSpace(lastLine(text.String()))
	}
	return rep, nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// Analysis is what umtrace's analyzer found in one scenario's trace.
type Analysis struct {
	StepP50Ms  float64 `json:"step_p50_ms"`
	SyncShare  float64 `json:"sync_share"`
	UMFaults   int64   `json:"um_faults"`
	MigratedMB float64 `json:"migrated_mb"`
	Verdict    string  `json:"verdict"`
	Storm      bool    `json:"storm"`
}

// Row is one line of the validation table.
type Row struct {
	Scenario string    `json:"scenario"`
	Trace    string    `json:"trace"`
	StepP50  float64   `json:"step_p50_ms"` // from the run's CUDA events
	Analysis *Analysis `json:"analysis,omitempty"`
	Expected bool      `json:"expected_storm"`
	Pass     bool      `json:"pass"`
	Err      string    `json:"error,omitempty"`
}

// ExpectedLabel renders a storm expectation.
func ExpectedLabel(storm bool) string {
	if storm {
		return "storm"
	}
	return "no storm"
}

// WriteTable prints rows as a Markdown table.
func WriteTable(w io.Writer, rows []Row) {
	fmt.Fprintln(w, "| scenario | step P50 ms | sync share | UM faults | migrated MB | verdict | expected | pass |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---|---|---|")
	for _, r := range rows {
		p50 := r.StepP50
		share, faults, mig, verdict := "-", "-", "-", "-"
		if a := r.Analysis; a != nil {
			if a.StepP50Ms > 0 {
				p50 = a.StepP50Ms
			}
			share = fmt.Sprintf("%.0f%%", 100*a.SyncShare)
			faults = fmt.Sprint(a.UMFaults)
			mig = fmt.Sprintf("%.1f", a.MigratedMB)
			verdict = a.Verdict
		}
		if r.Err != "" {
			verdict = "error: " + r.Err
		}
		pass := "no"
		if r.Pass {
			pass = "yes"
		}
		fmt.Fprintf(w, "| %s | %.2f | %s | %s | %s | %s | %s | %s |\n",
			r.Scenario, p50, share, faults, mig, verdict, ExpectedLabel(r.Expected), pass)
	}
}
