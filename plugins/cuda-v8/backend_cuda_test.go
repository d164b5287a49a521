//go:build cuda

package main

import (
	"testing"

	"github.com/flashcore/bench/internal/cudabackend/cudatest"
	_ "github.com/flashcore/bench/internal/gpu/gputest" // skip the binary without a GPU
	"github.com/flashcore/bench/sdk"
)

func TestMatchesReferenceOnGPU(t *testing.T) {
	cudatest.Check(t, New(), cudatest.StandardCases(tunables))
}

func TestRefusesUnsupportedCasesOnGPU(t *testing.T) {
	cudatest.CheckUnsupported(t, New())
}

func TestTimingOnGPU(t *testing.T) {
	small := sdk.Shape{Batch: 1, Heads: 8, KVHeads: 8, SeqQ: 512, SeqK: 512, HeadDim: 64, DType: sdk.FP16}
	large := sdk.Shape{Batch: 4, Heads: 16, KVHeads: 16, SeqQ: 2048, SeqK: 2048, HeadDim: 128, DType: sdk.FP16}
	cases := []cudatest.Case{{Shape: small}, {Shape: large}}
	for _, combo := range cudatest.Combinations(tunables) {
		cases = append(cases, cudatest.Case{Shape: small, Tunables: combo})
	}
	for _, c := range cases {
		t.Run(c.Name(), func(t *testing.T) { cudatest.Timing(t, New(), c.Shape, c.Tunables) })
	}
}
