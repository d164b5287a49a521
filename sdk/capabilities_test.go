package sdk

import "testing"

func TestCapabilitiesUnsupported(t *testing.T) {
	caps := Capabilities{DTypes: []DType{FP16}, HeadDims: []int{64, 128}, Causal: true, NonCausal: true, MaxSeqLen: 1024}
	base := Shape{Batch: 1, Heads: 8, KVHeads: 8, SeqQ: 512, SeqK: 512, HeadDim: 64, DType: FP16}
	tests := []struct {
		name   string
		modify func(*Shape)
		caps   func(*Capabilities)
		want   string
	}{
		{"fits", func(*Shape) {}, nil, ""},
		{"dtype", func(s *Shape) { s.DType = BF16 }, nil, "dtype bf16 not supported"},
		{"head dim", func(s *Shape) { s.HeadDim = 96 }, nil, "head dim 96 not supported (supported: [64 128])"},
		{"gqa", func(s *Shape) { s.KVHeads = 2 }, nil, "grouped-query heads not supported"},
		{"kv heads do not divide", func(s *Shape) { s.KVHeads = 3 }, nil, "heads 8 is not a multiple of kv_heads 3"},
		{"unequal", func(s *Shape) { s.SeqK = 600 }, nil, "Sq != Sk not supported"},
		{"too long", func(s *Shape) { s.SeqQ, s.SeqK = 2048, 2048 }, nil, "sequence length 2048 over the backend's limit of 1024"},
		{"causal only", func(*Shape) {}, func(c *Capabilities) { c.NonCausal = false }, "non-causal attention not supported"},
		{"no causal", func(s *Shape) { s.Causal = true }, func(c *Capabilities) { c.Causal = false }, "causal masking not supported"},
		{"zero dim", func(s *Shape) { s.Batch = 0 }, nil, "shape B0 H8 S512 D64 fp16 has a dimension below 1"},
		{"seq multiple", func(s *Shape) { s.SeqK = 520 }, func(c *Capabilities) { c.SeqMultiple = 64; c.UnequalSeqLens = true }, "sequence lengths 512x520 are not multiples of 64"},
		{"seq multiple met", func(*Shape) {}, func(c *Capabilities) { c.SeqMultiple = 64 }, ""},
		{"forward by default", func(s *Shape) { s.Mode = Forward }, nil, ""},
		{"backward not declared", func(s *Shape) { s.Mode = Backward }, nil, "mode bwd not supported (runs: fwd)"},
		{"backward declared", func(s *Shape) { s.Mode = Backward }, func(c *Capabilities) { c.Modes = []Mode{Forward, Backward} }, ""},
		{"fwd+bwd not declared", func(s *Shape) { s.Mode = ForwardBackward }, func(c *Capabilities) { c.Modes = []Mode{Forward, Backward} }, "mode fwd+bwd not supported (runs: fwd, bwd)"},
		{"backward only", func(*Shape) {}, func(c *Capabilities) { c.Modes = []Mode{Backward} }, "mode fwd not supported (runs: bwd)"},
		{"unknown mode", func(s *Shape) { s.Mode = "sideways" }, nil, `mode "sideways" is unknown: want fwd, bwd or fwd+bwd`},
		{"elements", func(*Shape) {}, func(c *Capabilities) { c.MaxElements = 1000 }, "262144 elements per tensor over the backend's limit of 1000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, c := base, caps
			tt.modify(&s)
			if tt.caps != nil {
				tt.caps(&c)
			}
			if got := c.Unsupported(s); got != tt.want {
				t.Errorf("Unsupported() = %q, want %q", got, tt.want)
			}
		})
	}
}
