package sdk

import (
	"maps"
	"time"

	"github.com/flashcore/bench/internal/pb"
)

// This file translates between the sdk types and their wire form in
// internal/pb. Each sdk type has a toProto and a fromProto function; every
// field is copied, and convert_test.go fails when one is missed. fromProto
// reads through the generated getters, so a message the sender left out
// decodes as the zero value. Empty lists and maps decode as nil.

func descriptionToProto(d Description) *pb.Description {
	return &pb.Description{
		Name:              d.Name,
		Version:           d.Version,
		Build:             d.Build,
		Available:         d.Available,
		UnavailableReason: d.UnavailableReason,
		Device:            deviceToProto(d.Device),
		Variants:          convertAll(d.Variants, variantToProto),
	}
}

func descriptionFromProto(p *pb.Description) Description {
	return Description{
		Name:              p.GetName(),
		Version:           p.GetVersion(),
		Build:             p.GetBuild(),
		Available:         p.GetAvailable(),
		UnavailableReason: p.GetUnavailableReason(),
		Device:            deviceFromProto(p.GetDevice()),
		Variants:          convertAll(p.GetVariants(), variantFromProto),
	}
}

func deviceToProto(d Device) *pb.Device {
	return &pb.Device{
		Kind:              d.Kind,
		Name:              d.Name,
		ComputeCapability: d.ComputeCapability,
		Multiprocessors:   int64(d.Multiprocessors),
		L2Bytes:           d.L2Bytes,
		MemoryBytes:       d.MemoryBytes,
		SmClockMhz:        d.SMClockMHz,
		MemClockMhz:       d.MemClockMHz,
		MemBusWidthBits:   int64(d.MemBusWidthBits),
		Driver:            d.Driver,
		Runtime:           d.Runtime,
		Cores:             int64(d.Cores),
		PeakTflops:        d.PeakTFLOPS,
		PeakGbps:          d.PeakGBps,
		Uuid:              d.UUID,
	}
}

func deviceFromProto(p *pb.Device) Device {
	return Device{
		Kind:              p.GetKind(),
		Name:              p.GetName(),
		ComputeCapability: p.GetComputeCapability(),
		Multiprocessors:   int(p.GetMultiprocessors()),
		L2Bytes:           p.GetL2Bytes(),
		MemoryBytes:       p.GetMemoryBytes(),
		SMClockMHz:        p.GetSmClockMhz(),
		MemClockMHz:       p.GetMemClockMhz(),
		MemBusWidthBits:   int(p.GetMemBusWidthBits()),
		Driver:            p.GetDriver(),
		Runtime:           p.GetRuntime(),
		Cores:             int(p.GetCores()),
		PeakTFLOPS:        p.GetPeakTflops(),
		PeakGBps:          p.GetPeakGbps(),
		UUID:              p.GetUuid(),
	}
}

func variantToProto(v Variant) *pb.Variant {
	return &pb.Variant{
		Name:           v.Name,
		Description:    v.Description,
		Capabilities:   capabilitiesToProto(v.Capabilities),
		Tunables:       convertAll(v.Tunables, tunableToProto),
		Ops:            copyOrNil(v.Ops),
		OpCapabilities: convertMap(v.OpCapabilities, capabilitiesToProto),
	}
}

func variantFromProto(p *pb.Variant) Variant {
	return Variant{
		Name:           p.GetName(),
		Description:    p.GetDescription(),
		Capabilities:   capabilitiesFromProto(p.GetCapabilities()),
		Tunables:       convertAll(p.GetTunables(), tunableFromProto),
		Ops:            copyOrNil(p.GetOps()),
		OpCapabilities: convertMap(p.GetOpCapabilities(), capabilitiesFromProto),
	}
}

func capabilitiesToProto(c Capabilities) *pb.Capabilities {
	return &pb.Capabilities{
		Dtypes:            convertAll(c.DTypes, func(d DType) string { return string(d) }),
		HeadDims:          convertAll(c.HeadDims, func(n int) int64 { return int64(n) }),
		Causal:            c.Causal,
		NonCausal:         c.NonCausal,
		GroupedQueryHeads: c.GroupedQueryHeads,
		UnequalSeqLens:    c.UnequalSeqLens,
		MaxSeqLen:         int64(c.MaxSeqLen),
		MaxElements:       int64(c.MaxElements),
		NeedsGpu:          c.NeedsGPU,
		SeqMultiple:       int64(c.SeqMultiple),
		Modes:             modesToProto(c.Modes),
		Masks:             copyOrNil(c.Masks),
	}
}

func capabilitiesFromProto(p *pb.Capabilities) Capabilities {
	return Capabilities{
		DTypes:            convertAll(p.GetDtypes(), func(s string) DType { return DType(s) }),
		HeadDims:          convertAll(p.GetHeadDims(), func(n int64) int { return int(n) }),
		Causal:            p.GetCausal(),
		NonCausal:         p.GetNonCausal(),
		GroupedQueryHeads: p.GetGroupedQueryHeads(),
		UnequalSeqLens:    p.GetUnequalSeqLens(),
		MaxSeqLen:         int(p.GetMaxSeqLen()),
		MaxElements:       int(p.GetMaxElements()),
		NeedsGPU:          p.GetNeedsGpu(),
		SeqMultiple:       int(p.GetSeqMultiple()),
		Modes:             modesFromProto(p.GetModes()),
		Masks:             copyOrNil(p.GetMasks()),
	}
}

func tunableToProto(t Tunable) *pb.Tunable {
	return &pb.Tunable{
		Name:        t.Name,
		Values:      copyOrNil(t.Values),
		Default:     t.Default,
		Description: t.Description,
		Ops:         copyOrNil(t.Ops),
	}
}

func tunableFromProto(p *pb.Tunable) Tunable {
	return Tunable{
		Name:        p.GetName(),
		Values:      copyOrNil(p.GetValues()),
		Default:     p.GetDefault(),
		Description: p.GetDescription(),
		Ops:         copyOrNil(p.GetOps()),
	}
}

func prepareRequestToProto(r PrepareRequest) *pb.PrepareRequest {
	return &pb.PrepareRequest{
		CaseId:      r.CaseID,
		Variant:     r.Variant,
		Shape:       shapeToProto(r.Shape),
		Tunables:    cloneOrNil(r.Tunables),
		Files:       tensorsToProto(r.Files),
		InputSha256: r.InputSHA256,
		Op:          r.Op,
		Params:      cloneOrNil(r.Params),
		Inputs:      convertAll(r.Inputs, tensorFileToProto),
		Outputs:     convertAll(r.Outputs, tensorFileToProto),
	}
}

func prepareRequestFromProto(p *pb.PrepareRequest) PrepareRequest {
	return PrepareRequest{
		CaseID:      p.GetCaseId(),
		Variant:     p.GetVariant(),
		Shape:       shapeFromProto(p.GetShape()),
		Tunables:    cloneOrNil(p.GetTunables()),
		Files:       tensorsFromProto(p.GetFiles()),
		InputSHA256: p.GetInputSha256(),
		Op:          p.GetOp(),
		Params:      cloneOrNil(p.GetParams()),
		Inputs:      convertAll(p.GetInputs(), tensorFileFromProto),
		Outputs:     convertAll(p.GetOutputs(), tensorFileFromProto),
	}
}

func tensorFileToProto(t TensorFile) *pb.TensorFile {
	return &pb.TensorFile{Name: t.Name, Path: t.Path, Dtype: string(t.DType), Dims: intsToProto(t.Dims)}
}

func tensorFileFromProto(p *pb.TensorFile) TensorFile {
	return TensorFile{Name: p.GetName(), Path: p.GetPath(), DType: DType(p.GetDtype()), Dims: intsFromProto(p.GetDims())}
}

func shapeToProto(s Shape) *pb.Shape {
	return &pb.Shape{
		Batch:   int64(s.Batch),
		Heads:   int64(s.Heads),
		KvHeads: int64(s.KVHeads),
		SeqQ:    int64(s.SeqQ),
		SeqK:    int64(s.SeqK),
		HeadDim: int64(s.HeadDim),
		Causal:  s.Causal,
		Mode:    string(s.Mode),
		Dtype:   string(s.DType),
	}
}

func shapeFromProto(p *pb.Shape) Shape {
	return Shape{
		Batch:   int(p.GetBatch()),
		Heads:   int(p.GetHeads()),
		KVHeads: int(p.GetKvHeads()),
		SeqQ:    int(p.GetSeqQ()),
		SeqK:    int(p.GetSeqK()),
		HeadDim: int(p.GetHeadDim()),
		Causal:  p.GetCausal(),
		Mode:    Mode(p.GetMode()),
		DType:   DType(p.GetDtype()),
	}
}

func tensorsToProto(t Tensors) *pb.Tensors {
	return &pb.Tensors{Q: t.Q, K: t.K, V: t.V, Output: t.Output}
}

func tensorsFromProto(p *pb.Tensors) Tensors {
	return Tensors{Q: p.GetQ(), K: p.GetK(), V: p.GetV(), Output: p.GetOutput()}
}

func preparedToProto(p Prepared) *pb.Prepared {
	return &pb.Prepared{
		LoadedSha256: p.LoadedSHA256,
		Diagnostics:  convertAll(p.Diagnostics, diagnosticToProto),
		Facts:        cloneOrNil(p.Facts),
	}
}

func preparedFromProto(p *pb.Prepared) Prepared {
	return Prepared{
		LoadedSHA256: p.GetLoadedSha256(),
		Diagnostics:  convertAll(p.GetDiagnostics(), diagnosticFromProto),
		Facts:        cloneOrNil(p.GetFacts()),
	}
}

func diagnosticToProto(d Diagnostic) *pb.Diagnostic {
	return &pb.Diagnostic{Severity: string(d.Severity), Summary: d.Summary, Detail: d.Detail}
}

func diagnosticFromProto(p *pb.Diagnostic) Diagnostic {
	return Diagnostic{Severity: Severity(p.GetSeverity()), Summary: p.GetSummary(), Detail: p.GetDetail()}
}

func fetchRequestToProto(r FetchRequest) *pb.FetchRequest {
	return &pb.FetchRequest{CaseId: r.CaseID}
}

func fetchRequestFromProto(p *pb.FetchRequest) FetchRequest {
	return FetchRequest{CaseID: p.GetCaseId()}
}

func fetchedToProto(f Fetched) *pb.Fetched {
	return &pb.Fetched{Diagnostics: convertAll(f.Diagnostics, diagnosticToProto)}
}

func fetchedFromProto(p *pb.Fetched) Fetched {
	return Fetched{Diagnostics: convertAll(p.GetDiagnostics(), diagnosticFromProto)}
}

func runRequestToProto(r RunRequest) *pb.RunRequest {
	return &pb.RunRequest{CaseId: r.CaseID, Measurement: measurementToProto(r.Measurement), Output: r.Output,
		Outputs: convertAll(r.Outputs, tensorFileToProto)}
}

func runRequestFromProto(p *pb.RunRequest) RunRequest {
	return RunRequest{CaseID: p.GetCaseId(), Measurement: measurementFromProto(p.GetMeasurement()), Output: p.GetOutput(),
		Outputs: convertAll(p.GetOutputs(), tensorFileFromProto)}
}

func measurementToProto(m Measurement) *pb.Measurement {
	return &pb.Measurement{
		WarmupRuns:   int64(m.WarmupRuns),
		WarmupTimeNs: int64(m.WarmupTime),
		MinSamples:   int64(m.MinSamples),
		MaxSamples:   int64(m.MaxSamples),
		TargetNoise:  m.TargetNoise,
		TimeCapNs:    int64(m.TimeCap),
		L2:           string(m.L2),
		CallSamples:  int64(m.CallSamples),
		Placements:   int64(m.Placements),
		NoCrossCheck: m.NoCrossCheck,
	}
}

func measurementFromProto(p *pb.Measurement) Measurement {
	return Measurement{
		WarmupRuns:   int(p.GetWarmupRuns()),
		WarmupTime:   time.Duration(p.GetWarmupTimeNs()),
		MinSamples:   int(p.GetMinSamples()),
		MaxSamples:   int(p.GetMaxSamples()),
		TargetNoise:  p.GetTargetNoise(),
		TimeCap:      time.Duration(p.GetTimeCapNs()),
		L2:           L2Mode(p.GetL2()),
		CallSamples:  int(p.GetCallSamples()),
		Placements:   int(p.GetPlacements()),
		NoCrossCheck: p.GetNoCrossCheck(),
	}
}

func samplesToProto(s Samples) *pb.Samples {
	return &pb.Samples{
		KernelTimesNs:     durationsToNanos(s.KernelTimes),
		CallTimesNs:       durationsToNanos(s.CallTimes),
		CrossCheckTimesNs: durationsToNanos(s.CrossCheckTimes),
		Method:            s.Method,
		SmClockMhz:        s.SMClockMHz,
		Diagnostics:       convertAll(s.Diagnostics, diagnosticToProto),
		Facts:             cloneOrNil(s.Facts),
		Before:            deviceStateToProto(s.Before),
		After:             deviceStateToProto(s.After),
		KernelBlocks:      intsToProto(s.KernelBlocks),
	}
}

func deviceStateToProto(d *DeviceState) *pb.DeviceState {
	if d == nil {
		return nil
	}
	return &pb.DeviceState{SmClockMhz: d.SMClockMHz, TemperatureC: d.TemperatureC, PowerW: d.PowerW}
}

func deviceStateFromProto(p *pb.DeviceState) *DeviceState {
	if p == nil {
		return nil
	}
	return &DeviceState{SMClockMHz: p.GetSmClockMhz(), TemperatureC: p.GetTemperatureC(), PowerW: p.GetPowerW()}
}

func samplesFromProto(p *pb.Samples) Samples {
	return Samples{
		KernelTimes:     nanosToDurations(p.GetKernelTimesNs()),
		CallTimes:       nanosToDurations(p.GetCallTimesNs()),
		CrossCheckTimes: nanosToDurations(p.GetCrossCheckTimesNs()),
		Method:          p.GetMethod(),
		SMClockMHz:      p.GetSmClockMhz(),
		Diagnostics:     convertAll(p.GetDiagnostics(), diagnosticFromProto),
		Facts:           cloneOrNil(p.GetFacts()),
		Before:          deviceStateFromProto(p.GetBefore()),
		After:           deviceStateFromProto(p.GetAfter()),
		KernelBlocks:    intsFromProto(p.GetKernelBlocks()),
	}
}

func releaseRequestToProto(r ReleaseRequest) *pb.ReleaseRequest {
	return &pb.ReleaseRequest{CaseId: r.CaseID}
}

func releaseRequestFromProto(p *pb.ReleaseRequest) ReleaseRequest {
	return ReleaseRequest{CaseID: p.GetCaseId()}
}

func durationsToNanos(ds []time.Duration) []int64 {
	return convertAll(ds, func(d time.Duration) int64 { return int64(d) })
}

func nanosToDurations(ns []int64) []time.Duration {
	return convertAll(ns, func(n int64) time.Duration { return time.Duration(n) })
}

// convertAll applies convert to every element; an empty list becomes nil.
func convertAll[From, To any](in []From, convert func(From) To) []To {
	if len(in) == 0 {
		return nil
	}
	out := make([]To, len(in))
	for i, v := range in {
		out[i] = convert(v)
	}
	return out
}

// convertMap converts every value of a map; an empty map becomes nil.
func convertMap[From, To any](in map[string]From, convert func(From) To) map[string]To {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]To, len(in))
	for k, v := range in {
		out[k] = convert(v)
	}
	return out
}

func copyOrNil(in []string) []string {
	return convertAll(in, func(s string) string { return s })
}

// cloneOrNil copies a map so that neither side aliases the other's; an
// empty map becomes nil.
func cloneOrNil(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}

func intsToProto(xs []int) []int64 {
	return convertAll(xs, func(x int) int64 { return int64(x) })
}

func intsFromProto(xs []int64) []int {
	return convertAll(xs, func(x int64) int { return int(x) })
}

func modesToProto(modes []Mode) []string {
	if len(modes) == 0 {
		return nil
	}
	out := make([]string, len(modes))
	for i, m := range modes {
		out[i] = string(m)
	}
	return out
}

func modesFromProto(modes []string) []Mode {
	if len(modes) == 0 {
		return nil
	}
	out := make([]Mode, len(modes))
	for i, m := range modes {
		out[i] = Mode(m)
	}
	return out
}
