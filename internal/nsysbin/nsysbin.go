// Package nsysbin finds the Nsight Systems command-line program, nsys:
// the opener runs it to export .nsys-rep reports to SQLite and
// `umtrace reproduce` records under it. It needs no cgo and no CUDA.
package nsysbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
)

// installGlobs are the usual install locations of nsys, tried in order
// after PATH; within one pattern the highest version (last name) wins.
var installGlobs = [...]string{
	"/usr/local/cuda/bin/nsys",
	"/opt/nvidia/nsight-systems/*/bin/nsys",
	"/opt/nvidia/nsight-systems/*/target-linux-x64/nsys",
	"/opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys",
	"/usr/local/cuda*/nsight-systems*/bin/nsys",
}

// Find returns the nsys binary: explicit if given (an error when it does
// not exist), else nsys on PATH, else the usual install locations. It
// returns "" and no error when none is found.
func Find(explicit string) (string, error) {
	if explicit != "" {
		if _, err := os.Stat(explicit); err != nil {
			return "", fmt.Errorf("nsys: %w", err)
		}
		return explicit, nil
	}
	if p, err := exec.LookPath("nsys"); err == nil {
		return p, nil
	}
	var cands []string
	for _, g := range installGlobs {
		m, _ := filepath.Glob(g)
		sort.Sort(sort.Reverse(sort.StringSlice(m)))
		cands = append(cands, m...)
	}
	for _, c := range cands {
		if fi, err := os.Stat(c); err == nil && !fi.IsDir() {
			return c, nil
		}
	}
	return "", nil
}
