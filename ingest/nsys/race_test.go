//go:build race

package nsys

// raceEnabled is true under the race detector, which makes the corruption
// suite run fewer cases.
const raceEnabled = true
