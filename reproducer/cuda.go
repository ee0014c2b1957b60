package reproducer

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>
#include "um.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"unsafe"
)

// ErrNoGPU is returned (wrapped) when this machine has no usable CUDA
// device: libcuda.so.1 does not load, cuInit fails (CUDA_ERROR_NO_DEVICE on
// a machine with the driver library but no GPU) or the driver counts no
// devices.
var ErrNoGPU = errors.New("no CUDA device")

var (
	loadOnce sync.Once
	loadErr  error
	loaded   bool // libcuda.so.1 and every entry point resolved
)

// Available reports whether a CUDA device can run the scenarios: the
// driver library loads with every entry point the scenarios use, cuInit
// succeeds and the driver counts at least one device. Errors that mean
// "no GPU here" wrap ErrNoGPU.
func Available() error {
	loadOnce.Do(func() { loadErr = detect(cgoDriver{}) })
	return loadErr
}

// driver is what detect needs from the CUDA driver; tests pass a fake.
type driver interface {
	// load opens the library; it returns the first missing piece
	// ("libcuda.so.1" or a symbol name) and the loader's message, or "".
	load() (missing, detail string)
	init() int                   // cuInit(0)
	deviceCount() (n int, r int) // cuDeviceGetCount
	errName(r int) string
}

// detect decides whether a usable GPU is present.
func detect(d driver) error {
	if miss, detail := d.load(); miss != "" {
		if miss == "libcuda.so.1" {
			return fmt.Errorf("%w: the CUDA driver library libcuda.so.1 does not load: %s", ErrNoGPU, detail)
		}
		return fmt.Errorf("cuda driver lacks %s (driver too old for CUDA 12.2 APIs?)", miss)
	}
	if r := d.init(); r != 0 {
		return fmt.Errorf("%w: cuInit: %s (%d)", ErrNoGPU, d.errName(r), r)
	}
	n, r := d.deviceCount()
	if r != 0 {
		return fmt.Errorf("%w: cuDeviceGetCount: %s (%d)", ErrNoGPU, d.errName(r), r)
	}
	if n <= 0 {
		return fmt.Errorf("%w: the CUDA driver reports %d devices", ErrNoGPU, n)
	}
	return nil
}

// cgoDriver is the real driver, through um.c.
type cgoDriver struct{}

func (cgoDriver) load() (string, string) {
	miss := C.um_load()
	if miss == nil {
		loaded = true
		return "", ""
	}
	detail := ""
	if e := C.dlerror(); e != nil {
		detail = C.GoString(e)
	}
	return C.GoString(miss), detail
}

func (cgoDriver) init() int { return int(C.um_probe_init()) }

func (cgoDriver) deviceCount() (int, int) {
	var n C.int
	r := C.um_device_count(&n)
	return int(n), int(r)
}

func (cgoDriver) errName(r int) string { return C.GoString(C.um_errname(C.CUresult(r))) }

func ck(what string, r C.CUresult) error {
	if r == 0 {
		return nil
	}
	return fmt.Errorf("%s: %s (%d)", what, C.GoString(C.um_errname(r)), int(r))
}

// Device attributes (CUdevice_attribute).
const (
	attrCCMajor            = 75
	attrCCMinor            = 76
	attrConcurrentManaged  = 89
	attrManagedMemory      = 83
	attrPageableMemoryAcc  = 88
	memLocDevice           = 1
	memLocHost             = 2
	adviseSetPreferredLoc  = 3
	adviseSetAccessedBy    = 5
	touchRepsDefault       = 1
	raceBlocks             = 64
	maxManagedFractionFree = 4 // never allocate more than free/4
)

// gpu is an initialized device with the scenario kernels loaded.
type gpu struct {
	dev    C.CUdevice
	ctx    C.CUcontext
	mod    C.CUmodule
	touch  C.CUfunction
	race   C.CUfunction
	info   DeviceInfo
	events [2]C.CUevent
}

// DeviceInfo describes the GPU a scenario ran on.
type DeviceInfo struct {
	Name          string `json:"name"`
	ComputeMajor  int    `json:"compute_major"`
	ComputeMinor  int    `json:"compute_minor"`
	DriverVersion int    `json:"driver_version"` // CUDA driver API version, e.g. 13000
	FreeBytes     uint64 `json:"free_bytes"`
	TotalBytes    uint64 `json:"total_bytes"`
	Kernels       string `json:"kernels"` // how the kernels were built, e.g. "nvrtc /usr/local/cuda/lib64/libnvrtc.so.13"
}

func openGPU(ordinal int) (*gpu, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	g := &gpu{}
	var dev C.CUdevice
	var ctx C.CUcontext
	if err := ck("cuInit/cuDevicePrimaryCtxRetain", C.um_init(C.int(ordinal), &dev, &ctx)); err != nil {
		return nil, err
	}
	g.dev, g.ctx = dev, ctx
	var v C.int
	if err := ck("cuDriverGetVersion", C.um_driver_version(&v)); err != nil {
		return nil, err
	}
	g.info.DriverVersion = int(v)
	buf := (*C.char)(C.malloc(256))
	defer C.free(unsafe.Pointer(buf))
	if err := ck("cuDeviceGetName", C.um_device_name(g.dev, buf, 256)); err != nil {
		return nil, err
	}
	g.info.Name = C.GoString(buf)
	var maj, minr, managed C.int
	if err := ck("cuDeviceGetAttribute", C.um_device_attr(g.dev, attrCCMajor, &maj)); err != nil {
		return nil, err
	}
	if err := ck("cuDeviceGetAttribute", C.um_device_attr(g.dev, attrCCMinor, &minr)); err != nil {
		return nil, err
	}
	if err := ck("cuDeviceGetAttribute", C.um_device_attr(g.dev, attrManagedMemory, &managed)); err != nil {
		return nil, err
	}
	if managed == 0 {
		return nil, fmt.Errorf("device %s does not support managed memory", g.info.Name)
	}
	g.info.ComputeMajor, g.info.ComputeMinor = int(maj), int(minr)
	var fr, tot C.size_t
	if err := ck("cuMemGetInfo", C.um_mem_info(&fr, &tot)); err != nil {
		return nil, err
	}
	g.info.FreeBytes, g.info.TotalBytes = uint64(fr), uint64(tot)
	ptx, how, err := buildKernels(g.info.ComputeMajor, g.info.ComputeMinor)
	if err != nil {
		return nil, err
	}
	g.info.Kernels = how
	cptx := C.CString(ptx)
	defer C.free(unsafe.Pointer(cptx))
	var mod C.CUmodule
	if err := ck("cuModuleLoadData", C.um_module_load(&mod, cptx)); err != nil {
		return nil, err
	}
	g.mod = mod
	for _, k := range []struct {
		name string
		fn   *C.CUfunction
	}{{"touch", &g.touch}, {"race", &g.race}} {
		cn := C.CString(k.name)
		var fn C.CUfunction
		err := ck("cuModuleGetFunction "+k.name, C.um_function(&fn, g.mod, cn))
		C.free(unsafe.Pointer(cn))
		*k.fn = fn
		if err != nil {
			return nil, err
		}
	}
	for i := range g.events {
		var ev C.CUevent
		if err := ck("cuEventCreate", C.um_event_create(&ev)); err != nil {
			return nil, err
		}
		g.events[i] = ev
	}
	return g, nil
}

func (g *gpu) close() {
	C.um_ctx_sync()
	for _, e := range g.events {
		if e != nil {
			C.um_event_destroy(e)
		}
	}
	if g.mod != nil {
		C.um_module_unload(g.mod)
	}
	C.um_release(g.dev)
}

// Exit ends the process through libc's exit, after asking the driver to
// flush profiler buffers. A run under nsys must end this way: nsys and
// CUPTI flush their trace buffers from atexit handlers, which Go's own exit
// path never calls, and a Go program that just returns leaves a trace
// without CUDA events.
func Exit(code int) {
	Available()
	if loaded {
		C.um_exit(C.int(code))
	}
	os.Exit(code)
}
