package reproducer

import (
	"errors"
	"strings"
	"testing"
)

// fakeDriver answers detect's questions the way a driver on some machine
// would.
type fakeDriver struct {
	missing, detail string
	initR           int
	count, countR   int
}

func (f fakeDriver) load() (string, string) { return f.missing, f.detail }
func (f fakeDriver) init() int              { return f.initR }
func (f fakeDriver) deviceCount() (int, int) {
	return f.count, f.countR
}
func (f fakeDriver) errName(r int) string {
	switch r {
	case 100:
		return "CUDA_ERROR_NO_DEVICE"
	case 35:
		return "CUDA_ERROR_INSUFFICIENT_DRIVER"
	}
	return "CUDA_ERROR_UNKNOWN"
}

func TestDetect(t *testing.T) {
	for _, c := range []struct {
		name  string
		d     fakeDriver
		noGPU bool   // want an error wrapping ErrNoGPU
		ok    bool   // want no error
		msg   string // in the error
	}{
		{"one GPU", fakeDriver{count: 1}, false, true, ""},
		{"eight GPUs", fakeDriver{count: 8}, false, true, ""},
		{"no libcuda", fakeDriver{missing: "libcuda.so.1", detail: "libcuda.so.1: cannot open shared object file"}, true, false, "libcuda.so.1 does not load"},
		// Debian's libcuda1 (pulled in by nsys) on a machine without a GPU.
		{"libcuda, no device", fakeDriver{initR: 100}, true, false, "CUDA_ERROR_NO_DEVICE"},
		{"old kernel module", fakeDriver{initR: 35}, true, false, "CUDA_ERROR_INSUFFICIENT_DRIVER"},
		{"count fails", fakeDriver{countR: 100}, true, false, "cuDeviceGetCount"},
		{"zero devices", fakeDriver{count: 0}, true, false, "reports 0 devices"},
		{"old driver", fakeDriver{missing: "cuMemPrefetchAsync_v2"}, false, false, "lacks cuMemPrefetchAsync_v2"},
	} {
		err := detect(c.d)
		if c.ok {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		if errors.Is(err, ErrNoGPU) != c.noGPU {
			t.Errorf("%s: errors.Is(%v, ErrNoGPU) = %v", c.name, err, !c.noGPU)
		}
		if !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %q lacks %q", c.name, err, c.msg)
		}
		if c.noGPU && !strings.Contains(err.Error(), "no CUDA device") {
			t.Errorf("%s: %q does not say no CUDA device", c.name, err)
		}
	}
}
