//go:build !unix

package main

import "io"

// supervise: see supervise.go; elsewhere commands run in-process.
func supervise(io.Writer, []string, func(string, []string) (string, []string)) (int, bool) {
	return 0, false
}
