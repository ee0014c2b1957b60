//go:build unix

package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Running out of memory is a fatal error in Go: the runtime prints
// "fatal error: out of memory" and a dump of every goroutine (100 to 300
// lines) and exits 2, and nothing in the process can recover. So the
// commands that read traces run supervised: umtrace starts itself again
// (the same executable, the same arguments, UMTRACE_SUPERVISED=1 in the
// environment), the child inherits stdin and stdout (the reports stream
// as before) and its stderr passes through the parent line by line. When
// the child dies of the runtime's out-of-memory errors (or the cgroup's
// OOM killer), the parent drops the dump and prints one line,
// "umtrace analyze: out of memory reading FILE (limit: ...)", and exits 4.
// A child that panics (or dies of another of the runtime's fatal errors)
// is a bug: the parent prints one line, "umtrace analyze: internal error
// reading FILE: MESSAGE (a bug in umtrace; the Go runtime's report is in
// PATH)", keeps the runtime's report in a file of the temporary directory
// for the bug report, and exits 4. Otherwise it exits with the child's
// code. SIGINT, SIGTERM, SIGHUP and
// SIGQUIT sent to the parent are passed to the child; a child killed by a
// signal kills the parent with it. The cost is one exec of the binary
// (a few milliseconds); UMTRACE_SUPERVISE=0 runs the command in-process.

const supervisedEnv = "UMTRACE_SUPERVISED"

// supervisedCommands read traces, whose size decides their memory.
var supervisedCommands = map[string]bool{"analyze": true, "batch": true, "diff": true, "gate": true, "export": true}

// supervise runs args in a supervised child when the command is one that
// reads traces; ok is false when the caller should run it in-process.
// child, when not nil, gives the child's program and arguments from this
// executable's and args (tests run the test binary, some under a limit of
// the child's own); nil runs this executable with args.
func supervise(stderr io.Writer, args []string, child func(exe string, args []string) (string, []string)) (code int, ok bool) {
	if os.Getenv(supervisedEnv) != "" || os.Getenv("UMTRACE_SUPERVISE") == "0" || len(args) == 0 || !supervisedCommands[args[0]] {
		return 0, false
	}
	for _, a := range args[1:] {
		if a == "-h" || a == "--help" {
			return 0, false
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return 0, false
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return 0, false
	}
	prog, argv := exe, args
	if child != nil {
		prog, argv = child(exe, args)
	}
	cmd := exec.Command(prog, argv...)
	cmd.Env = append(os.Environ(), supervisedEnv+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, pw
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	kills := oomKills()
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return 0, false
	}
	pw.Close()
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				cmd.Process.Signal(s)
			case <-done:
				return
			}
		}
	}()
	f := &stderrFilter{w: stderr}
	io.Copy(f, pr)
	f.flush()
	pr.Close()
	err = cmd.Wait()
	close(done)
	st, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	oomKilled := st.Signaled() && st.Signal() == syscall.SIGKILL && oomKills() > kills
	if (f.oom && !cmd.ProcessState.Success()) || oomKilled {
		fmt.Fprintf(stderr, "umtrace %s: out of memory%s (limit: %s)\n", args[0], readingWhat(args[1:]), readMemLimits().describe())
		return exitInternal, true
	}
	if f.crash != nil {
		if cmd.ProcessState.Success() || st.Signaled() {
			stderr.Write(f.dump.Bytes()) // not the child's end after all
		} else {
			fmt.Fprintf(stderr, "umtrace %s: internal error%s: %s\n", args[0], readingWhat(args[1:]), f.crashReport())
			return exitInternal, true
		}
	}
	if st.Signaled() {
		// Die of the same signal, as the child did.
		signal.Reset(st.Signal())
		syscall.Kill(os.Getpid(), st.Signal())
		time.Sleep(100 * time.Millisecond)
		return 128 + int(st.Signal()), true
	}
	if err != nil && cmd.ProcessState == nil {
		return exitInternal, true
	}
	return cmd.ProcessState.ExitCode(), true
}

// stderrFilter passes the child's stderr through, line by line, but holds a
// line that starts like one of the runtime's fatal messages until it is
// whole; from an out-of-memory line on it drops everything (the dump).
// Other text, partial lines (batch's progress bar) included, passes at once.
type stderrFilter struct {
	w       io.Writer
	pending []byte // the start of a line that may be a runtime message
	midLine bool   // part of the current line has been passed on
	oom     bool   // an out-of-memory line was seen: drop the rest
	crash   []byte // a panic's or other fatal error's first line, once seen: the rest goes to dump
	dump    bytes.Buffer
}

// maxDump bounds the runtime's report a crash keeps (every goroutine's
// stack: thousands of lines where many goroutines run).
const maxDump = 4 << 20

// isCrash reports whether line starts the runtime's report of a panic or
// of a fatal error other than running out of memory.
func isCrash(line []byte) bool {
	return bytes.HasPrefix(line, []byte("panic: ")) || (bytes.HasPrefix(line, []byte("fatal error: ")) && !isOOM(line))
}

// crashReport is the crash's message, and where its report was kept (a
// file umtrace-crash-*.txt of the temporary directory).
func (f *stderrFilter) crashReport() string {
	msg := strings.TrimSpace(string(f.crash))
	for _, p := range []string{"panic: ", "fatal error: "} {
		msg = strings.TrimPrefix(msg, p)
	}
	out, err := os.CreateTemp("", "umtrace-crash-*.txt")
	if err != nil {
		return msg + " (a bug in umtrace)"
	}
	_, err = out.Write(f.dump.Bytes())
	if cerr := out.Close(); err != nil || cerr != nil {
		os.Remove(out.Name())
		return msg + " (a bug in umtrace)"
	}
	return fmt.Sprintf("%s (a bug in umtrace; the Go runtime's report is in %s)", msg, out.Name())
}

// keep adds p to the crash's report, up to maxDump bytes.
func (f *stderrFilter) keep(p []byte) {
	if room := maxDump - f.dump.Len(); room > 0 {
		f.dump.Write(p[:min(len(p), room)])
	}
}

// runtimePrefixes start the runtime's fatal messages (a panic's too).
var runtimePrefixes = []string{"fatal error: ", "runtime: ", "runtime/cgo: ", "panic: "}

// oomMarks are the runtime's messages when memory or address space runs
// out (mallocgc, the page allocator, the heap's arenas, cgo threads).
var oomMarks = []string{"out of memory", "cannot allocate memory", "failed to reserve page summary memory",
	"cannot map pages in arena address space", "pthread_create failed", "failed to create new OS thread"}

func (f *stderrFilter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if f.oom {
			return n, nil
		}
		if f.crash != nil {
			f.keep(p)
			return n, nil
		}
		i := bytes.IndexByte(p, '\n')
		if f.midLine {
			// The rest of a line already passed on.
			end := len(p)
			if i >= 0 {
				end = i + 1
				f.midLine = false
			}
			f.w.Write(p[:end])
			p = p[end:]
			continue
		}
		if i < 0 {
			f.pending = append(f.pending, p...)
			p = nil
			if !mayBeRuntime(f.pending) {
				f.w.Write(f.pending)
				f.pending, f.midLine = f.pending[:0], true
			}
			continue
		}
		line := append(f.pending, p[:i+1]...)
		p = p[i+1:]
		switch {
		case isOOM(line):
			f.oom = true
		case isCrash(line):
			f.crash = slices.Clone(line)
			f.keep(line)
		default:
			f.w.Write(line)
		}
		f.pending = line[:0]
	}
	return n, nil
}

// flush passes on a held partial line at the end.
func (f *stderrFilter) flush() {
	if len(f.pending) > 0 && !f.oom && !isOOM(f.pending) {
		if f.crash != nil {
			f.keep(f.pending)
		} else {
			f.w.Write(f.pending)
		}
	}
	f.pending = nil
}

// mayBeRuntime reports whether a line beginning with b may be one of the
// runtime's messages: b starts with one of their prefixes, or is the start
// of one.
func mayBeRuntime(b []byte) bool {
	for _, p := range runtimePrefixes {
		if bytes.HasPrefix(b, []byte(p)) || strings.HasPrefix(p, string(b)) {
			return true
		}
	}
	return false
}

func isOOM(line []byte) bool {
	if !mayBeRuntime(line) {
		return false
	}
	for _, m := range oomMarks {
		if bytes.Contains(line, []byte(m)) {
			return true
		}
	}
	return false
}

// readingWhat names the trace arguments for the message: " reading a.sqlite"
// (the arguments that are existing files or directories and not the value
// of an output flag).
func readingWhat(args []string) string {
	var names []string
	for i, a := range args {
		if strings.HasPrefix(a, "-") && a != "-" {
			continue
		}
		if i > 0 && outputFlag[args[i-1]] {
			continue
		}
		if _, err := os.Stat(a); err == nil {
			names = append(names, a)
		}
	}
	switch {
	case len(names) == 0:
		return ""
	case len(names) > 3:
		return fmt.Sprintf(" reading %s and %d more", strings.Join(names[:2], ", "), len(names)-2)
	}
	return " reading " + strings.Join(names, ", ")
}

var outputFlag = map[string]bool{"-o": true, "--output": true, "--out-dir": true, "--out": true, "--junit": true, "--config": true}

// oomKills is the cgroup's count of OOM kills (v2 memory.events, v1
// memory.oom_control on newer kernels); 0 when unknown.
func oomKills() int64 {
	for _, p := range []string{cgroupRoot + "/memory.events", cgroupRoot + "/unified/memory.events", cgroupRoot + "/memory/memory.oom_control"} {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "oom_kill "); ok {
				var n int64
				fmt.Sscan(v, &n)
				return n
			}
		}
	}
	return 0
}
