package cudafile

import (
	"bufio"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Resources are what ptxas reports for one kernel: no GPU is needed.
type Resources struct {
	Kernel      string // as the spec names it: a symbol, or an instance's template-id
	Symbol      string // as the cubin names it
	Registers   int    // per thread
	StackBytes  int    // stack frame per thread
	SpillStores int    // bytes per thread
	SpillLoads  int    // bytes per thread
	SharedBytes int    // static shared memory per block
	ConstBytes  int    // constant memory (cmem[0], the parameters and the like)
	Barriers    int
	// Framed and Counted say that ptxas gave the kernel's stack-frame line
	// and its register line: a report without them says nothing of it.
	Framed, Counted bool
}

// ptxas's lines for a kernel, as nvcc --resource-usage prints them:
//
//	ptxas info    : Compiling entry function '_Z8attn_fwd...' for 'sm_90'
//	ptxas info    : Function properties for _Z8attn_fwd...
//	    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
//	ptxas info    : Used 40 registers, used 1 barriers, 17536 bytes smem, 400 bytes cmem[0]
var (
	ptxasEntry = regexp.MustCompile(`Compiling entry function '([^']+)'`)
	ptxasProps = regexp.MustCompile(`Function properties for (\S+)`)
	ptxasFrame = regexp.MustCompile(`(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads`)
	ptxasUsed  = regexp.MustCompile(`Used (\d+) registers`)
	ptxasPart  = regexp.MustCompile(`(\d+) (barriers|bytes smem|bytes cmem\[0\])`)
)

// ParseResources reads ptxas's resource report: one entry per kernel, in
// the report's order. A function that is no entry (a device function
// ptxas reports too) is left out.
func ParseResources(report string) []Resources {
	var out []Resources
	var cur *Resources
	props := "" // whose "Function properties" the next frame line gives
	sc := bufio.NewScanner(strings.NewReader(report))
	for sc.Scan() {
		line := sc.Text()
		if m := ptxasEntry.FindStringSubmatch(line); m != nil {
			out = append(out, Resources{Kernel: m[1], Symbol: m[1]})
			cur = &out[len(out)-1]
			continue
		}
		if cur == nil {
			continue
		}
		if m := ptxasProps.FindStringSubmatch(line); m != nil {
			props = m[1]
		}
		if m := ptxasFrame.FindStringSubmatch(line); m != nil && props == cur.Symbol {
			cur.StackBytes, cur.SpillStores, cur.SpillLoads = atoi(m[1]), atoi(m[2]), atoi(m[3])
			cur.Framed = true
		}
		if m := ptxasUsed.FindStringSubmatch(line); m != nil {
			cur.Registers, cur.Counted = atoi(m[1]), true
			for _, part := range ptxasPart.FindAllStringSubmatch(line, -1) {
				switch part[2] {
				case "barriers":
					cur.Barriers = atoi(part[1])
				case "bytes smem":
					cur.SharedBytes = atoi(part[1])
				default:
					cur.ConstBytes = atoi(part[1])
				}
			}
		}
	}
	return out
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// Report is a spec's source compiled for one architecture with each
// tunable at its default, as describe shows it.
type Report struct {
	Compiler string // nvcc --version's release line
	Arch     string
	Kernels  []Resources // sorted by Kernel
}

// Resources compiles spec's source for arch with the tunables' defaults
// (or takes it from the cache) and reads ptxas's report of each kernel,
// named as the spec names it.
func (c *Compiler) Resources(spec *Spec, arch string) (Report, error) {
	tunables := map[string]string{}
	for _, t := range spec.Tunables {
		tunables[t.Name] = t.Default
	}
	out, err := c.build(spec, arch, tunables)
	if err != nil {
		return Report{}, err
	}
	names := map[string]string{}
	for id, symbol := range out.image.Symbols {
		names[symbol] = id
	}
	kernels := ParseResources(out.log)
	for i, k := range kernels {
		if id, ok := names[k.Symbol]; ok {
			kernels[i].Kernel = id
		}
	}
	slices.SortFunc(kernels, func(a, b Resources) int { return strings.Compare(a.Kernel, b.Kernel) })
	return Report{Compiler: c.version, Arch: arch, Kernels: kernels}, nil
}
