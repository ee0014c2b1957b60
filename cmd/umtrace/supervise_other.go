//go:build !unix

package main

import "io"

// supervise: see supervise.go; elsewhere commands run in-process.
func supervise(io.Writer, []string) (int, bool) { return 0, false }
