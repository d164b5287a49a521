package ncu

import "strings"

// unitScale is the factor from a unit ncu prints to the base unit this
// package reports: nanoseconds for times, bytes for sizes, per second for
// rates; 1 for every other unit (%, cycle, register/thread, block, warp).
// ncu's prefixes are decimal: 1.024 Kbyte is 1024 bytes.
//
//	usecond → 1e3 (ns)   Kbyte/block → 1e3 (bytes/block)   Gbyte/second → 1e9 (bytes/s)
func unitScale(unit string) float64 {
	num, den, perSomething := strings.Cut(unit, "/")
	scale := prefixScale(num)
	if perSomething {
		if t, ok := timeScale[den]; ok {
			scale *= 1e9 / t // a rate: per second
		}
	}
	return scale
}

// timeScale is each time unit in nanoseconds. Releases of ncu from 2023 on
// print the short names (ns, us, ms, s); earlier ones the long names.
var timeScale = map[string]float64{
	"nsecond": 1, "usecond": 1e3, "msecond": 1e6, "second": 1e9,
	"ns": 1, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9,
}

// bytePrefixes are ncu's decimal prefixes of byte.
var bytePrefixes = map[string]float64{"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}

func prefixScale(unit string) float64 {
	if t, ok := timeScale[unit]; ok {
		return t
	}
	for _, suffix := range []string{"byte", "B"} {
		if p, ok := strings.CutSuffix(unit, suffix); ok {
			if s, ok := bytePrefixes[p]; ok {
				return s
			}
		}
	}
	return 1
}
