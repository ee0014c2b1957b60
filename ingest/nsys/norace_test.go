//go:build !race

package nsys

const raceEnabled = false
