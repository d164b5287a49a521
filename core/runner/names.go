package runner

import (
	"fmt"
	"slices"

	"github.com/flashcore/bench/core/host"
	"github.com/flashcore/bench/sdk"
)

// Names the host gives. A backend is known by the name the host found it
// under: its binary's (flashcore-backend-NAME) or its file's (py:, cu:).
// What a plugin calls itself is ignored, and the row names (variants) it
// declares may not pass it off as another backend: a variant named like
// another backend of the run, or like one of this project's own backends
// or rows when the plugin is not that backend, or like another backend's
// row, makes the plugin unavailable, as a fault, in every output.

// builtinRows maps each row name of this project's own backends to the
// backend that owns it.
var builtinRows = map[string]string{
	"cpu-reference": "cpu-reference",
	"cuda-scalar":   "cuda-scalar", "cuda-wmma": "cuda-wmma", "cuda-v8": "cuda-v8", "cuda-hopper": "cuda-hopper",
	"pytorch-sdpa": "pytorch-sdpa", "sdpa": "pytorch-sdpa", "sdpa-flash": "pytorch-sdpa", "sdpa-efficient": "pytorch-sdpa",
	"sdpa-cudnn": "pytorch-sdpa", "sdpa-math": "pytorch-sdpa", "torch-rmsnorm": "pytorch-sdpa",
	"sdpa-paged": "pytorch-sdpa", "sdpa-varlen": "pytorch-sdpa", "flex-attention": "pytorch-sdpa",
	"triton": "triton", "flash-attn-4": "flash-attn-4", "flashinfer": "flashinfer",
}

// refuseImpostors gives each backend the host's name for it and makes
// unavailable every backend whose row names collide (see above).
func refuseImpostors(backends []*backend) {
	for _, b := range backends {
		b.description.Name = b.plugin.Name
	}
	for _, b := range backends {
		if !b.description.Available {
			continue
		}
		if reason := nameCollision(b, backends); reason != "" {
			b.description.Available = false
			b.description.UnavailableReason = reason
			b.fault = true
		}
	}
}

func nameCollision(b *backend, backends []*backend) string {
	for _, v := range b.description.Variants {
		if owner, ok := builtinRows[v.Name]; ok && owner != b.plugin.Name {
			return fmt.Sprintf("refused: it names a row %q, which is %s's; a backend is known by its binary's or file's name (%s)", v.Name, owner, b.plugin.Name)
		}
		for _, other := range backends {
			if other == b {
				continue
			}
			if v.Name == other.plugin.Name {
				return fmt.Sprintf("refused: it names a row %q, which is another backend's name", v.Name)
			}
			if other.description.Available && slices.ContainsFunc(other.description.Variants, func(o sdk.Variant) bool { return o.Name == v.Name }) {
				return fmt.Sprintf("refused: it names a row %q, which backend %s names too", v.Name, other.plugin.Name)
			}
		}
	}
	return ""
}

// RefuseImpostors applies the host's naming rule to descriptions taken one
// plugin at a time (flashcore list, describe): descriptions[i] is
// plugins[i]'s, and is changed in place.
func RefuseImpostors(plugins []host.Plugin, descriptions []sdk.Description) {
	backends := make([]*backend, len(plugins))
	for i := range plugins {
		backends[i] = &backend{plugin: plugins[i], description: descriptions[i]}
	}
	refuseImpostors(backends)
	for i, b := range backends {
		descriptions[i] = b.description
	}
}

// RowOwner names the backend of this project that owns a row name such as
// "sdpa-flash" (pytorch-sdpa); ok is false for a name that is no built-in
// row.
func RowOwner(row string) (backend string, ok bool) {
	backend, ok = builtinRows[row]
	return backend, ok
}
