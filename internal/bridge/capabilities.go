package bridge

import (
	"fmt"
	"strings"

	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops"
	"github.com/flashcore/bench/ops/attention"
	"github.com/flashcore/bench/sdk"
)

// unsupported says why the variant named in req, as the worker described
// it on device, cannot run req, or "" when it can or when no variant has
// that name (the worker answers an unknown variant with its own error).
//
// The capability check is the host's (ops.Unsupported, which reads the
// variant's capabilities for the request's op), the one implementation
// there is: the host skips a row before Prepare with it,
// and the bridge applies it again so that a request that did not come
// through the host's check (a test, the conformance kit, another host)
// is refused before the worker reads a byte. The one check the host leaves
// to the backend is the device's: a variant that needs a GPU, described
// by a worker that found none. Tunables are checked here too, by the one
// check of tunables (sdk.ResolveTunables), so the worker never sees one
// its variant does not declare.
func unsupported(d sdk.Description, req sdk.PrepareRequest) string {
	i := variantIndex(d.Variants, req.Variant)
	if i < 0 {
		return ""
	}
	v := d.Variants[i]
	c := requestCase(req)
	if !ops.Supports(v, c.Op) {
		return fmt.Sprintf("op %s not supported", c.Op)
	}
	caps := v.CapabilitiesOf(c.Op)
	if caps.NeedsGPU && d.Device.Kind != "gpu" {
		return "needs a CUDA GPU; this machine has none"
	}
	if _, err := ops.Lookup(c.Op); err != nil {
		// A variant listing an op this build does not know.
		return err.Error()
	}
	reason := ops.Unsupported(v, c)
	if reason != "" && reason == caps.UnsupportedDType(c.DType()) {
		// The host never sends such a request, so whoever did is told
		// what the variant takes.
		reason += fmt.Sprintf(" (supports %s)", joinDTypes(caps.DTypes))
	}
	if reason != "" {
		return reason
	}
	if _, err := sdk.ResolveTunables(v.Tunables, c.Op, req.Tunables); err != nil {
		return err.Error()
	}
	return ""
}

// requestCase is the case req asks for, as the host's check reads it. For
// attention that is req.Shape, which the worker reads (a request from
// before ops carries no Params).
func requestCase(req sdk.PrepareRequest) op.Case {
	if req.Op == "" || req.Op == attention.Name {
		return attention.NewCase(req.Shape, op.Normal)
	}
	return op.Case{ID: req.CaseID, Op: req.Op, Params: op.Params(req.Params)}
}

func variantIndex(variants []sdk.Variant, name string) int {
	for i, v := range variants {
		if v.Name == name {
			return i
		}
	}
	return -1
}

func joinDTypes(dtypes []sdk.DType) string {
	names := make([]string, len(dtypes))
	for i, d := range dtypes {
		names[i] = string(d)
	}
	return strings.Join(names, ", ")
}
