package ingest

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

func TestTables(t *testing.T) {
	seen := map[string]bool{}
	for _, tab := range Tables {
		if seen[tab.Name] {
			t.Errorf("duplicate table %s", tab.Name)
		}
		seen[tab.Name] = true
		if TableByName(tab.Name) != tab {
			t.Errorf("TableByName(%s)", tab.Name)
		}
		if tab.Schema().NumFields() != len(tab.Columns) {
			t.Errorf("%s: schema has %d fields, %d columns", tab.Name, tab.Schema().NumFields(), len(tab.Columns))
		}
		for i, c := range tab.Columns {
			if tab.Index(c.Name) != i || c.Doc == "" {
				t.Errorf("%s.%s: index %d, doc %q", tab.Name, c.Name, tab.Index(c.Name), c.Doc)
			}
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("Index of an unknown column did not panic")
		}
	}()
	API.Index("nope")
}

// TestBuilderRoundTrip builds a batch with every column kind and reads it
// back through the typed views.
func TestBuilderRoundTrip(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	b := NewBuilder(mem, CPUFault)
	defer b.Release()
	for i := 0; i < 3; i++ {
		b.Int64(CPUFault.Index(ColStart), int64(100+i))
		b.Int64(CPUFault.Index(ColPid), 7)
		b.Uint64(CPUFault.Index(ColAddress), 1<<63+uint64(i))
		if i == 1 {
			b.Null(CPUFault.Index(ColPC))
		} else {
			b.Uint64(CPUFault.Index(ColPC), 0xabc)
		}
		b.String(CPUFault.Index(ColFunction), []string{"main", "loader", "main"}[i])
		b.String(CPUFault.Index(ColModule), "a.out")
		b.String(CPUFault.Index(ColSourceFile), "")
		b.Int32(CPUFault.Index(ColSourceLine), int32(i))
		b.EndRow()
	}
	if b.Rows() != 3 {
		t.Fatalf("rows %d", b.Rows())
	}
	rec := b.NewBatch()
	defer rec.Release()
	fn := Str(rec, CPUFault, ColFunction)
	if fn.Value(1) != "loader" || fn.Value(2) != "main" || fn.DictLen() != 2 || fn.Key(0) != fn.Key(2) {
		t.Errorf("function column: %q %q dict %d", fn.Value(1), fn.Value(2), fn.DictLen())
	}
	if a := U64(rec, CPUFault, ColAddress); a.Value(2) != 1<<63+2 {
		t.Errorf("address %x", a.Value(2))
	}
	if pc := U64(rec, CPUFault, ColPC); !pc.IsNull(1) || pc.IsNull(0) {
		t.Error("pc nulls")
	}
	if l := I32(rec, CPUFault, ColSourceLine); l.Value(2) != 2 {
		t.Error("line")
	}
	if s := I64(rec, CPUFault, ColStart); s.Value(0) != 100 {
		t.Error("start")
	}
}
