package batch

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestParseShard(t *testing.T) {
	for _, bad := range []string{"", "1", "0/3", "4/3", "a/b", "1/0", "-1/2"} {
		if _, err := ParseShard(bad); err == nil {
			t.Errorf("ParseShard(%q): want error", bad)
		}
	}
	s, err := ParseShard("2/3")
	if err != nil || s != (Shard{2, 3}) || s.String() != "2/3" {
		t.Fatalf("ParseShard(2/3) = %v, %v", s, err)
	}
}

func TestShardPartition(t *testing.T) {
	var paths []string
	for i := range 23 {
		paths = append(paths, filepath.Join("d", string(rune('a'+i))+".sqlite"))
	}
	for n := 1; n <= 7; n++ {
		seen := map[string]int{}
		for i := 1; i <= n; i++ {
			part := Shard{i, n}.Select(paths)
			if len(part) < len(paths)/n || len(part) > len(paths)/n+1 {
				t.Errorf("shard %d/%d has %d of %d", i, n, len(part), len(paths))
			}
			for _, p := range part {
				seen[p]++
			}
		}
		if len(seen) != len(paths) {
			t.Errorf("N=%d covers %d of %d", n, len(seen), len(paths))
		}
		for p, c := range seen {
			if c != 1 {
				t.Errorf("N=%d: %s in %d shards", n, p, c)
			}
		}
	}
	if got := (Shard{1, 3}).Select([]string{"a", "b", "c", "d"}); !reflect.DeepEqual(got, []string{"a", "d"}) {
		t.Errorf("1/3 of a..d = %v", got)
	}
}

func TestExpandAndIDs(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"x/a.sqlite", "x/sub/b.sqlite", "y/a.sqlite", "x/notes.txt", "z/c d.sqlite"} {
		full := filepath.Join(dir, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		os.WriteFile(full, []byte(p), 0o644)
	}
	got, fails := Expand([]string{filepath.Join(dir, "x"), filepath.Join(dir, "y", "*.sqlite"), filepath.Join(dir, "z", "c d.sqlite"),
		filepath.Join(dir, "x", "a.sqlite"), filepath.Join(dir, "nope", "*.sqlite"), filepath.Join(dir, "missing.sqlite")})
	want := []string{filepath.Join(dir, "x/a.sqlite"), filepath.Join(dir, "x/sub/b.sqlite"), filepath.Join(dir, "y/a.sqlite"), filepath.Join(dir, "z/c d.sqlite")}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Expand = %v, want %v", got, want)
	}
	if len(fails) != 2 {
		t.Errorf("failures = %v, want 2", fails)
	}
	ids := TraceIDs(got, nil)
	a1, a2 := ids[want[0]], ids[want[2]]
	if a1 == a2 || len(a1) != len("a-")+8 || a1[:2] != "a-" {
		t.Errorf("clashing ids %q %q", a1, a2)
	}
	if ids[want[1]] != "b" || ids[want[3]] != "c_d" {
		t.Errorf("ids = %v", ids)
	}
	// Identical content under two names still gets distinct ids.
	os.WriteFile(filepath.Join(dir, "y", "a.sqlite"), []byte("x/a.sqlite"), 0o644)
	ids = TraceIDs(got, nil)
	if ids[want[0]] == ids[want[2]] {
		t.Errorf("identical copies share id %q", ids[want[0]])
	}
}
