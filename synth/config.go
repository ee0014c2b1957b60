// Package synth writes synthetic Nsight Systems SQLite exports of training-like runs with planted Unified Memory storms and decoys.
package synth

import (
	"fmt"
	"math"
)

// Config describes the synthetic run. The zero value is not useful; start
// from DefaultConfig and change fields. Every field is written to the
// ground-truth JSON so a trace can be regenerated from it.
type Config struct {
	// Seed seeds math/rand/v2's PCG. The same Seed and Config give the same
	// rows, byte for byte in a dump.
	Seed uint64 `json:"seed"`
	// Steps is the number of training steps. Each step is one NVTX range
	// "train_step N" on the main thread.
	Steps int `json:"steps"`
	// KernelsPerStep is the number of cudaLaunchKernel calls per step,
	// spread round-robin over Streams streams and Threads host threads.
	KernelsPerStep int `json:"kernels_per_step"`
	// Streams is the number of CUDA streams kernels run on (1..64).
	Streams int `json:"streams"`
	// Threads is the number of host threads launching kernels (1..64); the
	// first is the main thread, which also syncs, copies and frees.
	Threads int `json:"threads"`
	// KernelNs is the median duration of a kernel outside storms, in ns.
	KernelNs int64 `json:"kernel_ns"`
	// MemcpyEvery puts a synchronous cudaMemcpy HtoD (a batch upload) at the
	// start of every MemcpyEvery-th step and a small DtoH (a loss read-back)
	// in its middle; 0 disables them.
	MemcpyEvery int `json:"memcpy_every"`
	// FreeEvery puts a cudaFree at the end of every FreeEvery-th step; 0
	// disables them.
	FreeEvery int `json:"free_every"`

	// Episodes is the number of planted storm episodes.
	Episodes int `json:"episodes"`
	// EpisodeSteps is the length of each storm episode in steps.
	EpisodeSteps int `json:"episode_steps"`
	// SlowdownMin and SlowdownMax bound the factor by which kernels slow
	// down in a storm; each episode draws its own factor between them.
	SlowdownMin float64 `json:"slowdown_min"`
	SlowdownMax float64 `json:"slowdown_max"`
	// FaultGroupsPerKernel is the number of GPU page-fault groups (rows of
	// CUDA_UM_GPU_PAGE_FAULT_EVENTS) per kernel in a storm step; each group
	// brings 2 to 5 fault-driven HtoD migrations (cause 2 and 3).
	FaultGroupsPerKernel int `json:"fault_groups_per_kernel"`
	// CPUFaultsPerStep is the number of CPU page faults after the sync of a
	// storm step; each brings a DtoH migration, and every fourth one a
	// speculative one too.
	CPUFaultsPerStep int `json:"cpu_faults_per_step"`

	// LongKernelDecoys is the number of decoy blocks in which one kernel per
	// step runs as long as a storm step, with no UM activity.
	LongKernelDecoys int `json:"long_kernel_decoys"`
	// PrefetchDecoys is the number of decoy blocks with bursts of
	// cudaMemPrefetchAsync (cause 1 migrations) and normal syncs.
	PrefetchDecoys int `json:"prefetch_decoys"`
	// SyncBurstDecoys is the number of decoy blocks in which each step ends
	// with SyncBurstSize short launch+cudaStreamSynchronize pairs.
	SyncBurstDecoys int `json:"sync_burst_decoys"`
	// DecoySteps is the length of each decoy block in steps.
	DecoySteps int `json:"decoy_steps"`
	// SyncBurstSize is the number of short syncs per sync-burst step.
	SyncBurstSize int `json:"sync_burst_size"`

	// Shape makes the trace look like a real export (shape.go).
	Shape Shape `json:"shape"`

	// Overwrite lets Generate replace existing output files.
	Overwrite bool `json:"-"`
}

// DefaultConfig is a small run (about 50k rows, 3 MB) with three storm
// episodes and one decoy of each kind.
var DefaultConfig = Config{
	Seed:                 1,
	Steps:                300,
	KernelsPerStep:       24,
	Streams:              2,
	Threads:              2,
	KernelNs:             200_000,
	MemcpyEvery:          10,
	FreeEvery:            5,
	Episodes:             3,
	EpisodeSteps:         20,
	SlowdownMin:          3,
	SlowdownMax:          10,
	FaultGroupsPerKernel: 4,
	CPUFaultsPerStep:     64,
	LongKernelDecoys:     1,
	PrefetchDecoys:       1,
	SyncBurstDecoys:      1,
	DecoySteps:           5,
	SyncBurstSize:        200,
}

// decoys is the total number of decoy blocks.
func (c Config) decoys() int { return c.LongKernelDecoys + c.PrefetchDecoys + c.SyncBurstDecoys }

// minGap is the fewest normal steps between two planted blocks and at the
// ends of the run, so that every planted block has a normal baseline
// around it.
const minGap = 4

// Validate reports the first invalid field.
func (c Config) Validate() error {
	switch {
	case c.Steps < 1:
		return fmt.Errorf("steps must be at least 1, got %d", c.Steps)
	case c.KernelsPerStep < 1:
		return fmt.Errorf("kernels per step must be at least 1, got %d", c.KernelsPerStep)
	case c.Streams < 1 || c.Streams > 64:
		return fmt.Errorf("streams must be in 1..64, got %d", c.Streams)
	case c.Threads < 1 || c.Threads > 64:
		return fmt.Errorf("threads must be in 1..64, got %d", c.Threads)
	case c.KernelNs < 1000:
		return fmt.Errorf("kernel duration must be at least 1000 ns, got %d", c.KernelNs)
	case c.MemcpyEvery < 0 || c.FreeEvery < 0:
		return fmt.Errorf("memcpy-every and free-every must not be negative")
	case c.Episodes < 0 || c.LongKernelDecoys < 0 || c.PrefetchDecoys < 0 || c.SyncBurstDecoys < 0:
		return fmt.Errorf("episode and decoy counts must not be negative")
	case c.Episodes > 0 && c.EpisodeSteps < 1:
		return fmt.Errorf("episode steps must be at least 1, got %d", c.EpisodeSteps)
	case c.decoys() > 0 && c.DecoySteps < 1:
		return fmt.Errorf("decoy steps must be at least 1, got %d", c.DecoySteps)
	case c.Episodes > 0 && (c.SlowdownMin < 1 || c.SlowdownMax < c.SlowdownMin || math.IsInf(c.SlowdownMax, 0) || math.IsNaN(c.SlowdownMax)):
		return fmt.Errorf("need 1 <= slowdown min <= slowdown max, got %g and %g", c.SlowdownMin, c.SlowdownMax)
	case c.FaultGroupsPerKernel < 0 || c.CPUFaultsPerStep < 0 || c.SyncBurstSize < 0:
		return fmt.Errorf("fault and burst counts must not be negative")
	}
	if err := c.Shape.validate(); err != nil {
		return err
	}
	if need := c.MinSteps(); c.Steps < need {
		return fmt.Errorf("%d steps cannot hold %d episodes of %d steps and %d decoys of %d steps with %d normal steps around each: need at least %d",
			c.Steps, c.Episodes, c.EpisodeSteps, c.decoys(), c.DecoySteps, minGap, need)
	}
	return nil
}

// MinSteps is the fewest steps that hold the planted episodes and decoys.
func (c Config) MinSteps() int {
	blocks := c.Episodes + c.decoys()
	return c.Episodes*c.EpisodeSteps + c.decoys()*c.DecoySteps + (blocks+1)*minGap
}

// EstimateRows estimates the rows Generate writes for c (within a few
// percent for runs of more than a few hundred steps).
func (c Config) EstimateRows() int64 {
	base, storm, decoy := c.rowsPerStep()
	normal := c.Steps - c.Episodes*c.EpisodeSteps - c.decoys()*c.DecoySteps
	setup := 2*c.Shape.Allocations + 2*c.Shape.Processes
	return int64(float64(normal)*base+float64(c.Episodes*c.EpisodeSteps)*storm+float64(c.decoys()*c.DecoySteps)*decoy) + 700 + int64(setup)
}

// rowsPerStep returns the expected rows of a normal step, a storm step and
// an average decoy step.
func (c Config) rowsPerStep() (normal, storm, decoy float64) {
	k := float64(c.KernelsPerStep)
	normal = 3*k + 2 + 1 + 2 // launches (driver+runtime+kernel), sync api+row, nvtx, memset api+row
	if c.MemcpyEvery > 0 {
		normal += 4 / float64(c.MemcpyEvery)
	}
	if c.FreeEvery > 0 {
		normal += 1 / float64(c.FreeEvery)
	}
	normal += k * float64(c.Shape.NVTXPerKernel)
	if c.Shape.DeviceSync {
		normal-- // no SYNCHRONIZATION row
	}
	// A fault group is 1 GPU fault row plus 3.5 migrations on average; a
	// CPU fault is 1 row plus 1.25 migrations.
	storm = normal + k*float64(c.FaultGroupsPerKernel)*4.5 + float64(c.CPUFaultsPerStep)*2.25
	d := float64(c.decoys())
	if d > 0 {
		extra := float64(c.PrefetchDecoys)*(prefetchesIn+prefetchesOut)*2 + float64(c.SyncBurstDecoys)*float64(c.SyncBurstSize)*5
		decoy = normal + extra/d
	}
	return normal, storm, decoy
}

// StepsForRows returns c with Steps chosen so that the trace has about
// rows rows (never fewer steps than MinSteps).
func (c Config) StepsForRows(rows int64) Config {
	c.Steps = c.MinSteps()
	normal, _, _ := c.rowsPerStep()
	if more := rows - c.EstimateRows(); more > 0 {
		c.Steps += int(float64(more) / normal)
	}
	return c
}
