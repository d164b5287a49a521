package sdk

import (
	"fmt"
	"slices"
	"strings"
)

// Unsupported says why a variant with capabilities c cannot run the
// attention case of shape s, or returns "" when it can. The host skips such cases with this reason before
// calling the backend; backends may call it too, to refuse a request that
// bypassed the host.
func (c Capabilities) Unsupported(s Shape) string {
	switch {
	case c.UnsupportedDType(s.DType) != "":
		return c.UnsupportedDType(s.DType)
	case s.Batch < 1 || s.Heads < 1 || s.KVHeads < 1 || s.SeqQ < 1 || s.SeqK < 1 || s.HeadDim < 1:
		return fmt.Sprintf("shape %s has a dimension below 1", s)
	case !s.Mode.Valid():
		return fmt.Sprintf("mode %q is unknown: want fwd, bwd or fwd+bwd", s.Mode)
	case !c.RunsMode(s.Mode):
		return fmt.Sprintf("mode %s not supported (runs: %s)", s.Mode.Or(), modesText(c.Modes))
	case s.Heads%s.KVHeads != 0:
		return fmt.Sprintf("heads %d is not a multiple of kv_heads %d", s.Heads, s.KVHeads)
	case len(c.HeadDims) > 0 && !slices.Contains(c.HeadDims, s.HeadDim):
		return fmt.Sprintf("head dim %d not supported (supported: %v)", s.HeadDim, c.HeadDims)
	case s.Causal && !c.Causal:
		return "causal masking not supported"
	case !s.Causal && !c.NonCausal:
		return "non-causal attention not supported"
	case s.KVHeads != s.Heads && !c.GroupedQueryHeads:
		return "grouped-query heads not supported"
	case s.SeqQ != s.SeqK && !c.UnequalSeqLens:
		return "Sq != Sk not supported"
	case c.MaxSeqLen > 0 && max(s.SeqQ, s.SeqK) > c.MaxSeqLen:
		return fmt.Sprintf("sequence length %d over the backend's limit of %d", max(s.SeqQ, s.SeqK), c.MaxSeqLen)
	case c.SeqMultiple > 1 && (s.SeqQ%c.SeqMultiple != 0 || s.SeqK%c.SeqMultiple != 0):
		return fmt.Sprintf("sequence lengths %dx%d are not multiples of %d", s.SeqQ, s.SeqK, c.SeqMultiple)
	}
	return c.OverMaxElements(max(s.QElements(), s.KVElements()))
}

// UnsupportedDType says why a variant cannot take data of type d, or "":
// the part of every op's capability check that concerns element types.
func (c Capabilities) UnsupportedDType(d DType) string {
	if !slices.Contains(c.DTypes, d) {
		return fmt.Sprintf("dtype %s not supported", d)
	}
	return ""
}

// OverMaxElements says why a variant cannot take a tensor of n elements,
// or "": the part of every op's capability check that concerns size.
func (c Capabilities) OverMaxElements(n int) string {
	if c.MaxElements > 0 && n > c.MaxElements {
		return fmt.Sprintf("%d elements per tensor over the backend's limit of %d", n, c.MaxElements)
	}
	return ""
}

// modesText lists the modes of a variant's capabilities, forward alone
// when it names none.
func modesText(modes []Mode) string {
	if len(modes) == 0 {
		return string(Forward)
	}
	text := make([]string, len(modes))
	for i, m := range modes {
		text[i] = string(m)
	}
	return strings.Join(text, ", ")
}
