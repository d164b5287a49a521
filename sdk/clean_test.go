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
