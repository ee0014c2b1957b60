// Package archtest holds no code: its tests check the module's
// architecture. layers_test.go declares umtrace's package layers, bottom to
// top, and checks the import graph against them (no cycle; no import from
// a lower layer up to a higher one) and against the picture of them in
// docs/architecture.md; limits_test.go checks the size limits of
// functions and types and that packages keep no mutable switches;
// door_test.go that commands open and analyze traces only through
// cmd/umtrace/internal/opener.
package archtest
