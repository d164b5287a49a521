package sdk

import "github.com/flashcore/bench/internal/untrusted"

// What a plugin says is data, never markup or terminal control: the host's
// client passes every string of every response through untrusted.Line (a
// name, a version, a device) or untrusted.Text (a description, a reason)
// as it arrives, so nothing downstream has to remember to. Messages of
// errors are capped at maxPluginMessage; reasons are capped again, with the
// whole text kept in a file, where the host records a row.

// maxPluginMessage bounds one error message or diagnostic from a plugin.
const maxPluginMessage = 64 << 10

// maxUUID bounds a device's UUID ("GPU-" and 36 characters, or "MIG-…").
const maxUUID = 64

func cleanDescription(d Description) Description {
	d.Name, d.Version, d.Build = untrusted.Line(d.Name), untrusted.Line(d.Version), untrusted.Line(d.Build)
	d.UnavailableReason = cleanMessage(d.UnavailableReason)
	dev := &d.Device
	dev.Kind, dev.Name, dev.ComputeCapability = untrusted.Line(dev.Kind), untrusted.Line(dev.Name), untrusted.Line(dev.ComputeCapability)
	dev.Driver, dev.Runtime = untrusted.Line(dev.Driver), untrusted.Line(dev.Runtime)
	// A UUID is about 40 bytes; it is quoted in reasons, so it is capped.
	dev.UUID, _ = untrusted.Cap(untrusted.Line(dev.UUID), maxUUID)
	for i := range d.Variants {
		v := &d.Variants[i]
		v.Name, v.Description = untrusted.Line(v.Name), untrusted.Text(v.Description)
		for j := range v.Ops {
			v.Ops[j] = untrusted.Line(v.Ops[j])
		}
		v.Capabilities = cleanCapabilities(v.Capabilities)
		v.OpCapabilities = cleanKeys(v.OpCapabilities)
		for op, c := range v.OpCapabilities {
			v.OpCapabilities[op] = cleanCapabilities(c)
		}
		for j := range v.Tunables {
			t := &v.Tunables[j]
			t.Name, t.Default, t.Description = untrusted.Line(t.Name), untrusted.Line(t.Default), untrusted.Text(t.Description)
			for k := range t.Values {
				t.Values[k] = untrusted.Line(t.Values[k])
			}
			for k := range t.Ops {
				t.Ops[k] = untrusted.Line(t.Ops[k])
			}
		}
	}
	return d
}

// cleanCapabilities cleans the names a variant's capabilities list: its
// dtypes, modes and masks, which `flashcore describe` prints.
func cleanCapabilities(c Capabilities) Capabilities {
	for i := range c.DTypes {
		c.DTypes[i] = DType(untrusted.Line(string(c.DTypes[i])))
	}
	for i := range c.Modes {
		c.Modes[i] = Mode(untrusted.Line(string(c.Modes[i])))
	}
	for i := range c.Masks {
		c.Masks[i] = untrusted.Line(c.Masks[i])
	}
	return c
}

// cleanKeys cleans the keys of m; nil stays nil.
func cleanKeys[V any](m map[string]V) map[string]V {
	if m == nil {
		return nil
	}
	out := make(map[string]V, len(m))
	for k, v := range m {
		out[untrusted.Line(k)] = v
	}
	return out
}

func cleanDiagnostics(ds []Diagnostic) []Diagnostic {
	for i := range ds {
		ds[i].Summary, ds[i].Detail = cleanMessage(ds[i].Summary), cleanMessage(ds[i].Detail)
	}
	return ds
}

func cleanFacts(facts map[string]string) map[string]string {
	if len(facts) == 0 {
		return facts
	}
	out := make(map[string]string, len(facts))
	for k, v := range facts {
		out[untrusted.Line(k)] = cleanMessage(v)
	}
	return out
}

func cleanMessage(s string) string {
	capped, _ := untrusted.Cap(untrusted.Text(s), maxPluginMessage)
	return capped
}

func cleanPrepared(p Prepared) Prepared {
	p.LoadedSHA256 = untrusted.Line(p.LoadedSHA256)
	p.Diagnostics, p.Facts = cleanDiagnostics(p.Diagnostics), cleanFacts(p.Facts)
	return p
}

func cleanSamples(s Samples) Samples {
	s.Method = untrusted.Line(s.Method)
	s.Diagnostics, s.Facts = cleanDiagnostics(s.Diagnostics), cleanFacts(s.Facts)
	return s
}
