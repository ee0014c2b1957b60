package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/umtrace/umtrace/ingest/testshared"
)

// umtraceCommand writes dir/umtrace, a script that runs umtrace (this
// package's test binary, built without the race detector under -race:
// plainExe) with its arguments, for shell scripts that call umtrace: the
// Slurm job script, the Kubernetes Job's command.
func umtraceCommand(t *testing.T, dir string) string {
	t.Helper()
	exe := plainExe(t)
	p := filepath.Join(dir, "umtrace")
	script := fmt.Sprintf("#!/bin/sh\nUMTRACE_TEST_MAIN=1 exec '%s' '-test.run=^TestHelperMain$' -- \"$@\"\n", exe)
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// freePorts returns n distinct TCP ports of localhost that nothing
// listens on now. The listeners stay open until all n are chosen: one
// closed before the next opened could hand the same port out twice (it
// did: slurmctld and slurmd were given one port, "slurmctld is talking
// with itself", and the node never came up).
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// slurmCluster is a one-node Slurm (munged, slurmctld, slurmd on
// localhost) in a temporary directory, for TestSlurmArray.
type slurmCluster struct {
	dir  string
	bins map[string]string // command name: path
	env  []string          // SLURM_CONF for the client commands
	logs []string          // daemon logs, shown when the test fails
}

// startSlurm starts munged, slurmctld and slurmd as root with a config
// of their own (no systemd, nothing in /etc) and waits until the node is
// idle. The daemons are stopped in t.Cleanup.
func startSlurm(t *testing.T) *slurmCluster {
	t.Helper()
	var missing []string
	bins := map[string]string{}
	for _, b := range []string{"munged", "slurmctld", "slurmd", "sbatch", "sinfo", "scancel", "squeue"} {
		if p, err := exec.LookPath(b); err == nil {
			bins[b] = p
			continue
		}
		// The daemons are in /usr/sbin, which a user's PATH may lack.
		for _, dir := range []string{"/usr/sbin", "/sbin", "/usr/local/sbin"} {
			if st, err := os.Stat(filepath.Join(dir, b)); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
				bins[b] = filepath.Join(dir, b)
				break
			}
		}
		if bins[b] == "" {
			missing = append(missing, b)
		}
	}
	why := ""
	switch {
	case len(missing) > 0:
		why = "Slurm is not installed (no " + strings.Join(missing, ", ") + " in PATH; Debian: apt-get install slurm-wlm munge)"
	case os.Geteuid() != 0:
		why = "the one-node Slurm runs its daemons as root; this test runs as uid " + fmt.Sprint(os.Geteuid())
	}
	if why != "" {
		if os.Getenv("UMTRACE_REQUIRE_SLURM") == "1" {
			t.Fatalf("UMTRACE_REQUIRE_SLURM=1 (CI: .ci/run) but %s", why)
		}
		t.Skip(why + "; UMTRACE_REQUIRE_SLURM=1 makes this a failure")
	}
	c := &slurmCluster{dir: t.TempDir(), bins: bins}
	d := c.dir
	for _, sub := range []string{"munge", "state", "spool", "log"} {
		if err := os.Mkdir(filepath.Join(d, sub), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	key := make([]byte, 1024)
	rand.Read(key)
	if err := os.WriteFile(filepath.Join(d, "munge", "munge.key"), key, 0o400); err != nil {
		t.Fatal(err)
	}
	// The node as slurmd sees it (CPUs, sockets, memory): a node
	// configured with more than it has is drained.
	hw, err := exec.Command(bins["slurmd"], "-C").Output()
	if err != nil {
		t.Fatalf("slurmd -C: %v", err)
	}
	line, _, _ := strings.Cut(string(hw), "\n")
	var node []string
	for _, f := range strings.Fields(line) {
		if !strings.HasPrefix(f, "NodeName=") {
			node = append(node, f)
		}
	}
	sock := filepath.Join(d, "munge", "munge.socket")
	ports := freePorts(t, 2)
	// Only what differs from Slurm's defaults (accounting, MPI, switch:
	// none), so the plugins named exist in every release since 22.05.
	conf := fmt.Sprintf(`ClusterName=umtrace-test
SlurmctldHost=localhost
SlurmctldPort=%d
SlurmdPort=%d
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=%s
StateSaveLocation=%s/state
SlurmdSpoolDir=%s/spool
SlurmctldPidFile=%s/slurmctld.pid
SlurmdPidFile=%s/slurmd.pid
SlurmctldLogFile=%s/log/slurmctld.log
SlurmdLogFile=%s/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MailProg=/bin/true
ReturnToService=2
NodeName=localhost NodeAddr=127.0.0.1 %s State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
`, ports[0], ports[1], sock, d, d, d, d, d, d, strings.Join(node, " "))
	confPath := filepath.Join(d, "slurm.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	c.env = append(os.Environ(), "SLURM_CONF="+confPath)
	c.logs = []string{filepath.Join(d, "log", "munged.out"), filepath.Join(d, "log", "slurmctld.out"), filepath.Join(d, "log", "slurmd.out")}

	start := func(logName string, argv ...string) {
		t.Helper()
		out, err := os.Create(filepath.Join(d, "log", logName))
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bins[argv[0]], argv[1:]...)
		cmd.Env = c.env
		cmd.Stdout, cmd.Stderr = out, out
		// Pdeathsig: a test binary killed by go test's -timeout leaves no daemon behind.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
		if err := cmd.Start(); err != nil {
			t.Fatalf("%s: %v", argv[0], err)
		}
		done := make(chan struct{})
		go func() { cmd.Wait(); out.Close(); close(done) }()
		// Cleanups run last-registered first: slurmd, slurmctld, munged.
		t.Cleanup(func() {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-done
			}
		})
	}
	t.Cleanup(func() {
		if t.Failed() {
			c.dumpLogs(t)
		}
	})
	start("munged.out", "munged", "--foreground", "--force", "--key-file="+filepath.Join(d, "munge", "munge.key"),
		"--socket="+sock, "--pid-file="+filepath.Join(d, "munge", "munged.pid"), "--seed-file="+filepath.Join(d, "munge", "munged.seed"),
		"--log-file="+filepath.Join(d, "log", "munged.log"))
	c.waitFor(t, "munged's socket", 20*time.Second, func() bool { _, err := os.Stat(sock); return err == nil })
	start("slurmctld.out", "slurmctld", "-D", "-i", "-f", confPath)
	start("slurmd.out", "slurmd", "-D", "-N", "localhost", "-f", confPath)
	// Jobs still running when the test ends are cancelled before slurmd stops.
	t.Cleanup(func() { c.run(context.Background(), "scancel", "--user=root") })
	c.waitFor(t, "the node to be idle (sinfo)", 60*time.Second, func() bool {
		out, _ := c.run(context.Background(), "sinfo", "--noheader", "--Node", "--format=%T")
		return strings.TrimSpace(out) == "idle"
	})
	return c
}

// run runs a Slurm client command with the cluster's config.
func (c *slurmCluster) run(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, c.bins[name], args...)
	cmd.Env = c.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (c *slurmCluster) waitFor(t *testing.T, what string, limit time.Duration, ok func() bool) {
	t.Helper()
	for end := time.Now().Add(limit); !ok(); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("waited %v for %s", limit, what)
		}
	}
}

func (c *slurmCluster) dumpLogs(t *testing.T) {
	for _, l := range c.logs {
		data, _ := os.ReadFile(l)
		if len(data) > 8000 {
			data = data[len(data)-8000:]
		}
		t.Logf("--- %s (end):\n%s", l, data)
	}
	out, _ := c.run(context.Background(), "squeue", "--all")
	t.Logf("--- squeue:\n%s", out)
}

// TestSlurmArray runs scripts/slurm/umtrace-batch.sbatch as a 4-task job
// array (sbatch --array=1-4 --wait) on a one-node Slurm started for the
// test, merges the shards with batch --merge and compares every file with
// a single-machine batch over the same traces, and the tasks' shared
// export dataset with a single export. Without Slurm it skips,
// unless UMTRACE_REQUIRE_SLURM=1 (CI).
func TestSlurmArray(t *testing.T) {
	began := time.Now()
	c := startSlurm(t)
	t.Logf("one-node Slurm up in %v", time.Since(began).Round(time.Millisecond))
	work := t.TempDir()
	archive := mergeInputs(t, filepath.Join(work, "archive"))
	bin := t.TempDir()
	umtrace := umtraceCommand(t, bin)
	script, err := filepath.Abs(filepath.Join(testshared.Root(), "scripts", "slurm", "umtrace-batch.sbatch"))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(work, "out")

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	sb := exec.CommandContext(ctx, c.bins["sbatch"], "--wait", "--array=1-4", "--chdir="+work,
		"--output="+filepath.Join(work, "slurm-%A_%a.out"), script)
	dataset := filepath.Join(work, "dataset")
	sb.Env = append(c.env, "ARCHIVE="+archive, "OUT="+out, "DATASET="+dataset, "UMTRACE="+umtrace)
	sbOut, err := sb.CombinedOutput()
	logs, _ := filepath.Glob(filepath.Join(work, "slurm-*.out"))
	t.Cleanup(func() {
		if t.Failed() {
			for _, l := range logs {
				data, _ := os.ReadFile(l)
				t.Logf("%s:\n%s", filepath.Base(l), data)
			}
		}
	})
	if err != nil {
		t.Fatalf("sbatch --wait --array=1-4: %v\n%s", err, sbOut)
	}
	t.Logf("%s: array done %v after start", strings.TrimSpace(string(sbOut)), time.Since(began).Round(time.Millisecond))
	if len(logs) != 4 {
		t.Errorf("%d task logs, want 4: %v", len(logs), logs)
	}

	shards, _ := filepath.Glob(filepath.Join(out, "shard-*"))
	if len(shards) != 4 {
		t.Fatalf("shard directories %v, want 4", shards)
	}
	umtraceRun := func(args ...string) (int, string, string) {
		cmd := exec.Command(umtrace, args...)
		cmd.Dir = work
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		cmd.Run()
		return cmd.ProcessState.ExitCode(), o.String(), e.String()
	}
	mcode, mout, merr := umtraceRun(append([]string{"batch", "--merge", "--out-dir", filepath.Join(out, "merged"), "-f", "json"}, shards...)...)
	scode, sout, serr := umtraceRun("batch", archive, "--out-dir", filepath.Join(work, "single"), "-q", "-f", "json")
	if scode != exitBadInput {
		t.Fatalf("single batch: exit %d, want %d (two bad files); stderr:\n%s", scode, exitBadInput, serr)
	}
	if mcode != scode || mout != sout {
		t.Errorf("merge: exit %d, stdout:\n%s\nsingle batch: exit %d, stdout:\n%s\nmerge's stderr: %s", mcode, mout, scode, sout, merr)
	}
	sameTree(t, treeFiles(t, filepath.Join(work, "single")), treeFiles(t, filepath.Join(out, "merged")), nil)

	// The tasks' exports share one dataset: it equals one unsharded export.
	if code, _, stderr := umtraceRun("export", archive, "--out-dir", filepath.Join(work, "dataset-single"), "-q"); code != exitBadInput {
		t.Fatalf("single export: exit %d, want %d (two bad files); stderr:\n%s", code, exitBadInput, stderr)
	}
	want := treeFiles(t, filepath.Join(work, "dataset-single"))
	if len(want) == 0 {
		t.Fatal("the single export wrote nothing")
	}
	sameTree(t, want, treeFiles(t, dataset), nil)
	t.Logf("TestSlurmArray took %v", time.Since(began).Round(time.Millisecond))
}
