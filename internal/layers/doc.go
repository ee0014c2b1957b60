// Package layers holds no code: its test declares umtrace's package
// layers, bottom to top, and checks the module's import graph against
// them (no cycle; no import from a lower layer up to a higher one) and
// against the picture of them in docs/architecture.md.
package layers
