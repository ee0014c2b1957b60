package nsysbin

import (
	"os"
	"path/filepath"
	"testing"
)

func TestFindExplicit(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "nsys")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if p, err := Find(bin); err != nil || p != bin {
		t.Errorf("Find(%q) = %q, %v; want the path itself", bin, p, err)
	}
	if p, err := Find(filepath.Join(dir, "missing")); err == nil || p != "" {
		t.Errorf("Find(missing) = %q, %v; want an error", p, err)
	}
}

func TestFindOnPath(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "nsys")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	if p, err := Find(""); err != nil || p != bin {
		t.Errorf("Find(\"\") with nsys on PATH = %q, %v; want %q", p, err, bin)
	}
}
