//go:build !unix

package analyze

func cpuSoFar() string { return "" }
