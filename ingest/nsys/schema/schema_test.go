package schema

import (
	"testing"

	"github.com/umtrace/umtrace/ingest"
)

// TestDeclarations checks what the compiler cannot: the column constants
// of tables declared by appending to the GPU activity columns name the
// columns they number, every table maps to its own ingest table, and
// every model column a column feeds exists.
func TestDeclarations(t *testing.T) {
	named := []struct {
		tab  *Table
		col  int
		name string
	}{
		{Kernel, KernelName, "demangledName"}, {Kernel, KernelBlockZ, "blockZ"},
		{Memcpy, MemcpyBytes, "bytes"}, {Memcpy, MemcpyCopyCount, "copyCount"},
		{Memset, MemsetMemKind, "memKind"}, {Sync, SyncEventID, "eventId"},
		{Sync, ActCorrelationID, "correlationId"},
	}
	for _, n := range named {
		if got := n.tab.Cols[n.col].Name; got != n.name {
			t.Errorf("%s column %d: %s, want %s", n.tab.Name, n.col, got, n.name)
		}
	}
	for _, tab := range append(Tables[:len(Tables):len(Tables)], ThreadNames, GPU) {
		if ForModel(tab.Model) != tab {
			t.Errorf("%s: ForModel(%s) is not it", tab.Name, tab.Model.Name)
		}
		for _, c := range append(tab.Cols[:len(tab.Cols):len(tab.Cols)], tab.Texts...) {
			if c.Name == "" {
				t.Errorf("%s: a column without a name", tab.Name)
			}
			for _, f := range c.Feeds {
				if !tab.Model.Has(f) {
					t.Errorf("%s.%s feeds %s, which %s lacks", tab.Name, c.Name, f, tab.Model.Name)
				}
			}
		}
	}
	if ForModel(ingest.SanitizerFinding) != nil {
		t.Error("sanitizer findings are not read from an export")
	}
}
