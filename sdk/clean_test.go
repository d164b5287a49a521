package sdk

import (
	"strings"
	"testing"
)

// A variant's ops are names a plugin chose: they reach the host as text
// with no control or bidi characters left, like its other names.
func TestCleanDescriptionCleansOps(t *testing.T) {
	d := cleanDescription(Description{Variants: []Variant{{Name: "v", Ops: []string{"rms\x1b[2Jnorm", "atten\u202etion"}}}})
	for _, name := range d.Variants[0].Ops {
		if strings.ContainsAny(name, "\x1b\u202e") {
			t.Errorf("op name %q kept a control or bidi character", name)
		}
	}
}

// The keys of a variant's per-op capabilities are op names too, cleaned
// as its Ops are, so a key still matches the op it names.
func TestCleanDescriptionCleansOpCapabilityKeys(t *testing.T) {
	caps := Capabilities{DTypes: []DType{FP32}}
	d := cleanDescription(Description{Variants: []Variant{{Name: "v", Ops: []string{"rms\x1b[2Jnorm"},
		OpCapabilities: map[string]Capabilities{"rms\x1b[2Jnorm": caps}}}})
	v := d.Variants[0]
	for name := range v.OpCapabilities {
		if strings.ContainsAny(name, "\x1b\u202e") {
			t.Errorf("op capability key %q kept a control character", name)
		}
	}
	if got := v.CapabilitiesOf(v.Ops[0]); len(got.DTypes) != 1 || got.DTypes[0] != FP32 {
		t.Errorf("CapabilitiesOf(%q) = %+v: the cleaned key no longer matches the cleaned op", v.Ops[0], got)
	}
}

// The ops a tunable applies to are op names too, cleaned as the variant's
// Ops are, so the tunable still applies to the op it names.
func TestCleanDescriptionCleansTunableOps(t *testing.T) {
	d := cleanDescription(Description{Variants: []Variant{{Name: "v", Ops: []string{"atten\x1b[2Jtion"},
		Tunables: []Tunable{{Name: "rows", Values: []string{"4"}, Default: "4", Ops: []string{"atten\x1b[2Jtion"}}}}}})
	v := d.Variants[0]
	tu := v.Tunables[0]
	for _, name := range tu.Ops {
		if strings.ContainsAny(name, "\x1b\u202e") {
			t.Errorf("tunable op %q kept a control character", name)
		}
	}
	if !tu.AppliesTo(v.Ops[0]) {
		t.Errorf("tunable ops %q no longer match the cleaned op %q", tu.Ops, v.Ops[0])
	}
}

// The names a variant's capabilities list (dtypes, modes, masks), of the
// variant and of each op, reach the host cleaned, as `describe` prints
// them.
func TestCleanDescriptionCleansCapabilityNames(t *testing.T) {
	dirty := Capabilities{DTypes: []DType{"fp\x1b[2J16"}, Modes: []Mode{"f\u202ewd"}, Masks: []string{"win\x1b]0;xdow"}}
	clone := func() Capabilities {
		c := dirty
		c.DTypes, c.Modes, c.Masks = append([]DType(nil), dirty.DTypes...), append([]Mode(nil), dirty.Modes...), append([]string(nil), dirty.Masks...)
		return c
	}
	d := cleanDescription(Description{Variants: []Variant{{Name: "v", Ops: []string{"decode"}, Capabilities: clone(),
		OpCapabilities: map[string]Capabilities{"decode": clone()}}}})
	v := d.Variants[0]
	for _, c := range []Capabilities{v.Capabilities, v.OpCapabilities["decode"]} {
		names := []string{string(c.DTypes[0]), string(c.Modes[0]), c.Masks[0]}
		for _, name := range names {
			if strings.ContainsAny(name, "\x1b\u202e") {
				t.Errorf("capability name %q kept a control or bidi character", name)
			}
		}
	}
}

// A device's UUID is quoted in the host's reasons: it arrives cleaned and
// capped like the plugin's other strings.
func TestCleanDescriptionCleansTheUUID(t *testing.T) {
	d := cleanDescription(Description{Device: Device{Kind: "gpu", UUID: "GPU-\x1b[31m" + strings.Repeat("a", 10000)}})
	if strings.Contains(d.Device.UUID, "\x1b") || len(d.Device.UUID) > maxUUID+32 {
		t.Errorf("UUID kept an escape or its length (%d bytes): %.80q", len(d.Device.UUID), d.Device.UUID)
	}
}
