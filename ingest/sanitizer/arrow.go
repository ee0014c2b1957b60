package sanitizer

import (
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/umtrace/umtrace/tracemodel"
)

// Record returns the findings of logs, in order, as one record batch of
// tracemodel.SanitizerFinding. The caller must Release it.
func Record(mem memory.Allocator, logs ...*Log) arrow.RecordBatch {
	t := tracemodel.SanitizerFinding
	b := tracemodel.NewBuilder(mem, t)
	defer b.Release()
	n := 0
	for _, l := range logs {
		n += len(l.Findings)
	}
	b.Reserve(n)
	var (
		iFile, iLine, iFmt = t.Index(tracemodel.ColSanLogFile), t.Index(tracemodel.ColSanLogLine), t.Index(tracemodel.ColSanFormat)
		iTool, iSev, iKind = t.Index(tracemodel.ColSanTool), t.Index(tracemodel.ColSanSeverity), t.Index(tracemodel.ColSanKind)
		iMsg, iKer, iBase  = t.Index(tracemodel.ColSanMessage), t.Index(tracemodel.ColSanKernel), t.Index(tracemodel.ColSanKernelBase)
		iSrc, iSrcLine     = t.Index(tracemodel.ColSourceFile), t.Index(tracemodel.ColSourceLine)
		iPC                = t.Index(tracemodel.ColPC)
		iThr               = [3]int{t.Index(tracemodel.ColSanThreadX), t.Index(tracemodel.ColSanThreadY), t.Index(tracemodel.ColSanThreadZ)}
		iBlk               = [3]int{t.Index(tracemodel.ColSanBlockX), t.Index(tracemodel.ColSanBlockY), t.Index(tracemodel.ColSanBlockZ)}
		iAddr, iSize       = t.Index(tracemodel.ColAddress), t.Index(tracemodel.ColSanSize)
		iSpace, iAcc, iDet = t.Index(tracemodel.ColSanSpace), t.Index(tracemodel.ColSanAccess), t.Index(tracemodel.ColSanDetail)
		iHaz, iRace        = t.Index(tracemodel.ColSanHazards), t.Index(tracemodel.ColSanRaceWith)
		iAPI, iAPIErr      = t.Index(tracemodel.ColSanAPIName), t.Index(tracemodel.ColSanAPIError)
		iAPIRes, iLeak     = t.Index(tracemodel.ColSanAPIResult), t.Index(tracemodel.ColSanLeakBytes)
		iAllocA, iAllocS   = t.Index(tracemodel.ColSanAllocAddress), t.Index(tracemodel.ColSanAllocSize)
		iHost, iDev        = t.Index(tracemodel.ColSanHostFrames), t.Index(tracemodel.ColSanDeviceFrames)
	)
	u64 := func(i int, v uint64, ok bool) {
		if ok {
			b.Uint64(i, v)
		} else {
			b.Null(i)
		}
	}
	i64 := func(i int, v int64, ok bool) {
		if ok {
			b.Int64(i, v)
		} else {
			b.Null(i)
		}
	}
	for _, l := range logs {
		for k := range l.Findings {
			f := &l.Findings[k]
			b.String(iFile, l.Path)
			b.Int64(iLine, int64(f.LogLine))
			b.String(iFmt, l.Format)
			b.String(iTool, f.Tool)
			b.String(iSev, f.Severity)
			b.String(iKind, f.Kind)
			b.String(iMsg, f.Message)
			b.String(iKer, f.Kernel)
			b.String(iBase, f.KernelBase)
			b.String(iSrc, f.File)
			b.Int32(iSrcLine, int32(f.Line))
			u64(iPC, f.PC, f.HasPC)
			th := [3]int32{f.Thread.X, f.Thread.Y, f.Thread.Z}
			bl := [3]int32{f.Block.X, f.Block.Y, f.Block.Z}
			for j := 0; j < 3; j++ {
				if f.HasThread {
					b.Int32(iThr[j], th[j])
					b.Int32(iBlk[j], bl[j])
				} else {
					b.Null(iThr[j])
					b.Null(iBlk[j])
				}
			}
			u64(iAddr, f.Address, f.HasAddress)
			i64(iSize, f.Size, f.HasSize)
			b.String(iSpace, f.Space)
			b.String(iAcc, f.Access)
			b.String(iDet, f.Detail)
			i64(iHaz, f.Hazards, f.HasHazards)
			race := make([]string, len(f.RaceWith))
			for j := range f.RaceWith {
				race[j] = f.RaceWith[j].String()
			}
			b.String(iRace, strings.Join(race, "\n"))
			b.String(iAPI, f.API)
			b.String(iAPIErr, f.APIError)
			if f.HasResult {
				b.Int32(iAPIRes, f.APIResult)
			} else {
				b.Null(iAPIRes)
			}
			i64(iLeak, f.LeakBytes, f.HasLeak)
			u64(iAllocA, f.AllocAddress, f.HasAlloc)
			i64(iAllocS, f.AllocSize, f.HasAlloc)
			b.String(iHost, strings.Join(f.HostFrames, "\n"))
			b.String(iDev, strings.Join(f.DeviceFrames, "\n"))
			b.EndRow()
		}
	}
	return b.NewBatch()
}
