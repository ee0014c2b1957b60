package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/umtrace/umtrace/internal/outfile"
)

// output is the -f/--format and -o/--output pair of every command that
// writes one report: -o names a file (stdout without it), -f its format.
// Without -f, a known extension of -o picks the format (x.html: html);
// an -f that contradicts the extension is a usage error.
type output struct {
	fs      *pflag.FlagSet
	formats []string
	format  *string
	path    *string
}

// extFormats maps output file extensions to formats.
var extFormats = map[string]string{
	".txt": "text", ".text": "text", ".md": "md", ".markdown": "md", ".json": "json",
	".html": "html", ".htm": "html", ".csv": "csv",
}

// outputFlags registers -f/--format (default def, one of formats) and
// -o/--output on fs.
func outputFlags(fs *pflag.FlagSet, what, def string, formats ...string) *output {
	o := &output{fs: fs, formats: formats}
	o.format = fs.StringP("format", "f", def, "format of the "+what+": "+orList(formats)+
		"; without -f, -o's extension picks it")
	o.path = fs.StringP("output", "o", "", "write the "+what+" to `FILE` instead of stdout (- is stdout)")
	return o
}

// orList formats a list as "a, b or c".
func orList(xs []string) string {
	if len(xs) < 2 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " or " + xs[len(xs)-1]
}

// resolve checks the pair after parsing and returns the format. inputs
// are the command's input files, which -o must not name.
func (o *output) resolve(inputs ...string) (string, error) {
	f := *o.format
	if *o.path != "" {
		if st, err := os.Stat(*o.path); err == nil && st.IsDir() {
			return "", usageErr("-o %s is a directory; -o names an output file (directories: --out-dir)", *o.path)
		}
		if err := outfile.CheckInputs(*o.path, inputs...); err != nil {
			return "", usageErr("-o %v; refusing to overwrite it", err)
		}
		if err := outfile.Check(*o.path); err != nil {
			return "", internal(err)
		}
		ext := strings.ToLower(filepath.Ext(*o.path))
		if byExt, ok := extFormats[ext]; ok {
			switch {
			case !o.fs.Changed("format") && slices.Contains(o.formats, byExt):
				f = byExt
			case !o.fs.Changed("format"):
				return "", usageErr("-o %s: this command writes %s, not %s (pass -f to force a format)", *o.path, orList(o.formats), byExt)
			case f != byExt:
				return "", usageErr("--format %s contradicts -o %s (%s means %s); drop one", f, *o.path, ext, byExt)
			}
		}
	}
	if !slices.Contains(o.formats, f) {
		return "", usageErr("unknown --format %q (want %s)", f, orList(o.formats))
	}
	return f, nil
}

// stream writes what gen generates to stdout ("-" or no -o) or the output
// file (through outfile: atomically, a symlink's target, a device or FIFO
// written through), without holding it all in memory: a job's JSON
// reaches hundreds of MB.
func (o *output) stream(stdout io.Writer, gen func(io.Writer) error) error {
	if *o.path == "" || *o.path == outfile.Stdout {
		bw := bufio.NewWriterSize(stdout, 256<<10)
		err := gen(bw)
		if err == nil {
			err = bw.Flush()
		}
		if err != nil {
			return internal(fmt.Errorf("writing output: %w", err))
		}
		return nil
	}
	if err := outfile.WriteFunc(*o.path, stdout, gen); err != nil {
		return internal(err)
	}
	return nil
}

// write puts data in the -o file (atomically) or on stdout.
func (o *output) write(stdout io.Writer, data []byte) error {
	return o.stream(stdout, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// outDirFlag registers --out-dir (and --out as a hidden, deprecated alias)
// for commands that write many files. Unless the command has its own
// -o/--output (batch: the summary), -o is rejected with a hint.
func outDirFlag(fs *pflag.FlagSet, def, usage string) func() (string, error) {
	dir := fs.String("out-dir", def, usage)
	old := fs.String("out", "", "")
	_ = fs.MarkDeprecated("out", "use --out-dir")
	var wrongO *string
	if fs.Lookup("output") == nil {
		wrongO = fs.StringP("output", "o", "", "")
		_ = fs.MarkHidden("output")
	}
	return func() (string, error) {
		if wrongO != nil && fs.Changed("output") {
			return "", usageErr("-o/--output names one output file; this command writes a directory: --out-dir %s", *wrongO)
		}
		if fs.Changed("out") {
			if fs.Changed("out-dir") && *old != *dir {
				return "", usageErr("--out %s and --out-dir %s disagree (--out is the old name of --out-dir)", *old, *dir)
			}
			return *old, nil
		}
		return *dir, nil
	}
}

// outputArg registers -o/--output for a command whose one output file may
// also be given as its last argument (redact IN OUT, synth OUT.sqlite).
func outputArg(fs *pflag.FlagSet, what string) func() ([]string, string, error) {
	o := fs.StringP("output", "o", "", "write the "+what+" to `FILE` (or give FILE as the last argument)")
	return func() ([]string, string, error) {
		args := fs.Args()
		if *o != "" {
			return args, *o, nil
		}
		if len(args) == 0 {
			return nil, "", usageErr("no output file: give -o FILE or FILE as the last argument")
		}
		return args[:len(args)-1], args[len(args)-1], nil
	}
}
