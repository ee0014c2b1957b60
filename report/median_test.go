package report

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestNthSmallest holds the selection to a sort: every rank of random,
// sorted, reversed, constant, few-valued and organ-pipe lists.
func TestNthSmallest(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	gens := map[string]func(n int) []int64{
		"random": func(n int) []int64 {
			s := make([]int64, n)
			for i := range s {
				s[i] = r.Int64N(1 << 40)
			}
			return s
		},
		"sorted": func(n int) []int64 {
			s := make([]int64, n)
			for i := range s {
				s[i] = int64(i)
			}
			return s
		},
		"reversed": func(n int) []int64 {
			s := make([]int64, n)
			for i := range s {
				s[i] = int64(n - i)
			}
			return s
		},
		"constant": func(n int) []int64 { return make([]int64, n) },
		"few": func(n int) []int64 {
			s := make([]int64, n)
			for i := range s {
				s[i] = r.Int64N(3) - 1
			}
			return s
		},
		"organ": func(n int) []int64 {
			s := make([]int64, n)
			for i := range s {
				s[i] = int64(min(i, n-i))
			}
			return s
		},
	}
	for name, gen := range gens {
		for _, n := range []int{1, 2, 3, 4, 7, 10, 100, 1001, 20000} {
			in := gen(n)
			want := slices.Clone(in)
			slices.Sort(want)
			ks := []int{0, n - 1, (n - 1) / 2, n / 3}
			for range 5 {
				ks = append(ks, r.IntN(n))
			}
			for _, k := range ks {
				if got := nthSmallest(slices.Clone(in), k); got != want[k] {
					t.Fatalf("%s n=%d k=%d: got %d, want %d", name, n, k, got, want[k])
				}
			}
			if got := median(in); got != want[(n-1)/2] {
				t.Fatalf("%s n=%d: median %d, want %d", name, n, got, want[(n-1)/2])
			}
		}
	}
}
