// Command umtrace finds and explains CUDA Unified Memory implicit
// synchronization storms in Nsight Systems traces. See README.md.
package main

import "os"

func main() {
	// Commands that read traces run in a supervised child, so that running
	// out of memory is one line and exit 4 (supervise.go).
	if code, ok := supervise(os.Stderr, os.Args[1:], nil); ok {
		os.Exit(code)
	}
	os.Exit(run(os.Stdout, os.Stderr, os.Args[1:]))
}
