package sdk

import (
	"reflect"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// The fixtures below set every field to a value that is not the zero value
// and differs from its neighbours, so a converter that drops or swaps a
// field fails the round trip. requireNoZeroFields keeps the fixtures honest:
// when a field is added to an sdk type, the fixture fails until it sets it,
// and then the round trip fails until the converters carry it.

func fixtureShape() Shape {
	return Shape{Batch: 2, Heads: 8, KVHeads: 4, SeqQ: 128, SeqK: 256, HeadDim: 64, Causal: true, DType: BF16, Mode: Backward}
}

func fixtureDiagnostics() []Diagnostic {
	return []Diagnostic{
		{Severity: Warning, Summary: "clock throttled", Detail: "SM clock 1410 MHz < 1980 MHz"},
		{Severity: Unsupported, Summary: "head dim", Detail: "only 64 and 128"},
	}
}

func fixtureDescription() Description {
	return Description{
		Name:              "cuda-v8",
		Version:           "0.3.1",
		Build:             "git 1a2b3c, nvcc 11.8",
		Available:         true,
		UnavailableReason: "not really: fixture",
		Device: Device{
			Kind:              "gpu",
			Name:              "NVIDIA H100 80GB HBM3",
			ComputeCapability: "9.0",
			Multiprocessors:   132,
			L2Bytes:           50 << 20,
			MemoryBytes:       80 << 30,
			SMClockMHz:        1980,
			MemClockMHz:       2619,
			MemBusWidthBits:   5120,
			Driver:            "580.159.04",
			Runtime:           "CUDA 13.0",
			Cores:             16,
			PeakTFLOPS:        989.4,
			PeakGBps:          3352.5,
			UUID:              "GPU-8a7b6c5d-aaaa-bbbb-cccc-111111111111",
		},
		Variants: []Variant{{
			Name:        "cuda-v8",
			Description: "mma.sync, 8 warps",
			Ops:         []string{"attention", "rmsnorm"},
			Capabilities: Capabilities{
				DTypes:            []DType{FP16, BF16},
				HeadDims:          []int{64, 128},
				Causal:            true,
				NonCausal:         true,
				GroupedQueryHeads: true,
				UnequalSeqLens:    true,
				MaxSeqLen:         32768,
				MaxElements:       1 << 31,
				NeedsGPU:          true,
				SeqMultiple:       16,
				Modes:             []Mode{Forward, Backward},
				Masks:             []string{MaskWindow, MaskSoftcap},
			},
			OpCapabilities: map[string]Capabilities{
				"rmsnorm": {DTypes: []DType{FP16, BF16, FP32}, MaxElements: 1 << 30, NeedsGPU: true},
			},
			Tunables: []Tunable{
				{Name: "tile_n", Values: []string{"32", "64"}, Default: "64", Description: "keys per tile", Ops: []string{"attention"}},
				{Name: "stages", Values: []string{"2", "3"}, Default: "2", Description: "pipeline depth", Ops: []string{"attention", "rmsnorm"}},
			},
		}},
	}
}

func fixturePrepareRequest() PrepareRequest {
	return PrepareRequest{
		CaseID:      "case-0007",
		Variant:     "cuda-v8",
		Shape:       fixtureShape(),
		Tunables:    map[string]string{"tile_n": "32", "stages": "3"},
		Files:       Tensors{Q: "in/q.bin", K: "in/k.bin", V: "in/v.bin", Output: "out/o.bin"},
		InputSHA256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		Op:          "attention",
		Params:      map[string]string{"batch": "2", "heads": "8"},
		Inputs:      []TensorFile{{Name: "q", Path: "in/q.bin", DType: FP16, Dims: []int{2, 8, 256, 64}}},
		Outputs:     []TensorFile{{Name: "o", Path: "out/o.bin", DType: BF16, Dims: []int{2, 8, 256, 64}}},
	}
}

func fixturePrepared() Prepared {
	return Prepared{
		LoadedSHA256: "60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752",
		Diagnostics:  fixtureDiagnostics(),
		Facts:        map[string]string{"registers": "128", "smem_bytes": "49152"},
	}
}

func fixtureRunRequest() RunRequest {
	return RunRequest{
		CaseID:  "case-0008",
		Outputs: []TensorFile{{Name: "y", Path: "out/timed-y.bin", DType: FP32, Dims: []int{7, 9}}},
		Measurement: Measurement{
			WarmupRuns:   11,
			WarmupTime:   55 * time.Millisecond,
			MinSamples:   21,
			MaxSamples:   2001,
			TargetNoise:  0.004,
			TimeCap:      3 * time.Second,
			L2:           L2Cold,
			CallSamples:  19,
			Placements:   3,
			NoCrossCheck: true,
		},
		Output: "/tmp/case-0008/timed.bin",
	}
}

func fixtureSamples() Samples {
	return Samples{
		KernelTimes:     []time.Duration{7400, 7450, 7390},
		CallTimes:       []time.Duration{31000, 29500},
		CrossCheckTimes: []time.Duration{7380, 7420},
		Method:          "cuda-events+spin",
		SMClockMHz:      1980,
		Diagnostics:     fixtureDiagnostics(),
		Facts:           map[string]string{"kernel": "flash_fwd_sm90"},
		Before:          &DeviceState{SMClockMHz: 1980, TemperatureC: 41, PowerW: 120},
		After:           &DeviceState{SMClockMHz: 1755, TemperatureC: 67, PowerW: 690},
		KernelBlocks:    []int{2, 1},
	}
}

// roundTripCase is one sdk type's trip: sdk → proto → wire bytes → proto → sdk.
type roundTripCase struct {
	name string
	run  func(t *testing.T)
}

func roundTrip[T any, P proto.Message](name string, fixture T, toProto func(T) P, fromProto func(P) T) roundTripCase {
	return roundTripCase{name: name, run: func(t *testing.T) {
		requireNoZeroFields(t, reflect.ValueOf(fixture), name)
		message := toProto(fixture)
		requireAllProtoFieldsSet(t, message.ProtoReflect(), name)
		wire, err := proto.Marshal(message)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		decoded := message.ProtoReflect().New().Interface().(P)
		if err := proto.Unmarshal(wire, decoded); err != nil {
			t.Fatalf("unmarshal: %v", err)
		}
		if got := fromProto(decoded); !reflect.DeepEqual(got, fixture) {
			t.Errorf("round trip changed the value\n got: %+v\nwant: %+v", got, fixture)
		}
		var zero T
		if got := fromProto(toProto(zero)); !reflect.DeepEqual(got, zero) {
			t.Errorf("zero value did not survive the round trip: %+v", got)
		}
	}}
}

func TestConvertRoundTripsEveryField(t *testing.T) {
	cases := []roundTripCase{
		roundTrip("Description", fixtureDescription(), descriptionToProto, descriptionFromProto),
		roundTrip("PrepareRequest", fixturePrepareRequest(), prepareRequestToProto, prepareRequestFromProto),
		roundTrip("Prepared", fixturePrepared(), preparedToProto, preparedFromProto),
		roundTrip("FetchRequest", FetchRequest{CaseID: "case-0009"}, fetchRequestToProto, fetchRequestFromProto),
		roundTrip("Fetched", Fetched{Diagnostics: fixtureDiagnostics()}, fetchedToProto, fetchedFromProto),
		roundTrip("RunRequest", fixtureRunRequest(), runRequestToProto, runRequestFromProto),
		roundTrip("Samples", fixtureSamples(), samplesToProto, samplesFromProto),
		roundTrip("ReleaseRequest", ReleaseRequest{CaseID: "case-0010"}, releaseRequestToProto, releaseRequestFromProto),
	}
	for _, c := range cases {
		t.Run(c.name, c.run)
	}
}

func TestConvertFromNilMessagesGivesZeroValues(t *testing.T) {
	if got := descriptionFromProto(nil); !reflect.DeepEqual(got, Description{}) {
		t.Errorf("descriptionFromProto(nil) = %+v", got)
	}
	if got := prepareRequestFromProto(nil); !reflect.DeepEqual(got, PrepareRequest{}) {
		t.Errorf("prepareRequestFromProto(nil) = %+v", got)
	}
	if got := samplesFromProto(nil); !reflect.DeepEqual(got, Samples{}) {
		t.Errorf("samplesFromProto(nil) = %+v", got)
	}
}

func TestConvertDoesNotAliasMaps(t *testing.T) {
	request := fixturePrepareRequest()
	message := prepareRequestToProto(request)
	message.Tunables["tile_n"] = "changed"
	if request.Tunables["tile_n"] != "32" {
		t.Errorf("changing the message changed the request's map")
	}
}

// requireNoZeroFields fails for every field, element or map of v, at any
// depth, that holds its zero value or is empty.
func requireNoZeroFields(t *testing.T, v reflect.Value, path string) {
	t.Helper()
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			requireNoZeroFields(t, v.Field(i), path+"."+v.Type().Field(i).Name)
		}
	case reflect.Slice:
		if v.Len() == 0 {
			t.Errorf("fixture leaves %s empty", path)
		}
		for i := range v.Len() {
			requireNoZeroFields(t, v.Index(i), path+"[]")
		}
	case reflect.Map:
		if v.Len() == 0 {
			t.Errorf("fixture leaves %s empty", path)
		}
	default:
		if v.IsZero() {
			t.Errorf("fixture leaves %s at its zero value", path)
		}
	}
}

// requireAllProtoFieldsSet fails for every field of m, at any depth, that
// the converter left unset: a proto field no converter fills.
func requireAllProtoFieldsSet(t *testing.T, m protoreflect.Message, path string) {
	t.Helper()
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		field := fields.Get(i)
		fieldPath := path + "." + string(field.Name())
		if !m.Has(field) {
			t.Errorf("converter leaves proto field %s unset", fieldPath)
			continue
		}
		switch {
		case field.IsMap():
		case field.IsList() && field.Message() != nil:
			list := m.Get(field).List()
			for j := range list.Len() {
				requireAllProtoFieldsSet(t, list.Get(j).Message(), fieldPath+"[]")
			}
		case field.Message() != nil:
			requireAllProtoFieldsSet(t, m.Get(field).Message(), fieldPath)
		}
	}
}
