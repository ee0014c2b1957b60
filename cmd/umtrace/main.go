// Command umtrace finds and explains CUDA Unified Memory implicit
// synchronization storms in Nsight Systems traces. See README.md.
package main

import "os"

func main() {
	os.Exit(run(os.Stdout, os.Stderr, os.Args[1:]))
}
