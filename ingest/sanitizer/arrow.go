package sanitizer

import (
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/umtrace/umtrace/ingest"
)

// Record returns the findings of logs, in order, as one record batch of
// ingest.SanitizerFinding. The caller must Release it.
func Record(mem memory.Allocator, logs ...*Log) arrow.RecordBatch {
	t := ingest.SanitizerFinding
	b := ingest.NewBuilder(mem, t)
	defer b.Release()
	n := 0
	for _, l := range logs {
		n += len(l.Findings)
	}
	b.Reserve(n)
	var (
		iFile, iLine, iFmt = t.Index(ingest.ColSanLogFile), t.Index(ingest.ColSanLogLine), t.Index(ingest.ColSanFormat)
		iTool, iSev, iKind = t.Index(ingest.ColSanTool), t.Index(ingest.ColSanSeverity), t.Index(ingest.ColSanKind)
		iMsg, iKer, iBase  = t.Index(ingest.ColSanMessage), t.Index(ingest.ColSanKernel), t.Index(ingest.ColSanKernelBase)
		iSrc, iSrcLine     = t.Index(ingest.ColSourceFile), t.Index(ingest.ColSourceLine)
		iPC                = t.Index(ingest.ColPC)
		iThr               = [3]int{t.Index(ingest.ColSanThreadX), t.Index(ingest.ColSanThreadY), t.Index(ingest.ColSanThreadZ)}
		iBlk               = [3]int{t.Index(ingest.ColSanBlockX), t.Index(ingest.ColSanBlockY), t.Index(ingest.ColSanBlockZ)}
		iAddr, iSize       = t.Index(ingest.ColAddress), t.Index(ingest.ColSanSize)
		iSpace, iAcc, iDet = t.Index(ingest.ColSanSpace), t.Index(ingest.ColSanAccess), t.Index(ingest.ColSanDetail)
		iHaz, iRace        = t.Index(ingest.ColSanHazards), t.Index(ingest.ColSanRaceWith)
		iAPI, iAPIErr      = t.Index(ingest.ColSanAPIName), t.Index(ingest.ColSanAPIError)
		iAPIRes, iLeak     = t.Index(ingest.ColSanAPIResult), t.Index(ingest.ColSanLeakBytes)
		iAllocA, iAllocS   = t.Index(ingest.ColSanAllocAddress), t.Index(ingest.ColSanAllocSize)
		iHost, iDev        = t.Index(ingest.ColSanHostFrames), t.Index(ingest.ColSanDeviceFrames)
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
