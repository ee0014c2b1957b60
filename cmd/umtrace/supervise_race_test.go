//go:build race

package main

// underRace: the race detector's shadow memory takes terabytes of address
// space, so tests under memory limits cannot run.
const underRace = true
