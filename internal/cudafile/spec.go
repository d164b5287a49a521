package cudafile

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/flashcore/bench/core/suite"
	"github.com/flashcore/bench/core/tomlpos"
	"github.com/flashcore/bench/sdk"
)

// Spec is a CUDA-file backend as its spec file declares it, validated.
type Spec struct {
	Path        string // the spec file
	Description string
	// Source is the .cu file compiled at Prepare; Binary a prebuilt cubin,
	// fatbin or PTX. Exactly one is set, as an absolute path.
	Source, Binary string
	Options        []string // extra nvcc options
	// OutputReset, when set, is the float32 word O is set to before every
	// call (output_reset), for a kernel that accumulates into O.
	OutputReset  *uint32
	Capabilities sdk.Capabilities
	Tunables     []sdk.Tunable
	Scratch      []Scratch
	Kernels      []Kernel
	// Backward is attention's backward (mode bwd), when the spec's
	// [backward] table declares it: its own scratch and kernels, whose
	// params may name the backward's tensors too (backwardTensors).
	Backward *Pass
	// Ops are the spec's op tables ([decode], [varlen], ...), sorted by
	// op name: each op the variant runs besides attention.
	Ops []OpTable
}

// Pass is the scratch and kernels of one mode.
type Pass struct {
	Scratch []Scratch
	Kernels []Kernel
}

// Scratch is one [[scratch]] buffer.
type Scratch struct {
	Name  string
	Bytes Formula
	// Reset, when set, is the word every 4 bytes are set to before every
	// call: zero = true, or reset = "-inf" and the like.
	Reset *uint32
}

// Kernel is one [[kernels]] launch, in order.
type Kernel struct {
	// Entry is the symbol, or a template-id ("attn<{T}, {D}, {causal}>"),
	// with case parameters and tunables as placeholders (Symbol).
	Entry       string
	Instances   map[string][]int64 // values to instantiate a template entry for, by name
	Grid, Block [3]Formula         // x, y, z
	SharedBytes Formula            // dynamic shared memory
	Params      []Param
}

// file is the schema of a spec file. Values that may be a number or a
// formula are decoded as any.
type file struct {
	Description     string            `toml:"description"`
	Source          string            `toml:"source"`
	Binary          string            `toml:"binary"`
	CompilerOptions []string          `toml:"compiler_options"`
	OutputReset     *string           `toml:"output_reset"`
	Capabilities    capabilitiesTable `toml:"capabilities"`
	Tunables        []struct {
		Name        string   `toml:"name"`
		Values      []string `toml:"values"`
		Default     string   `toml:"default"`
		Description string   `toml:"description"`
	} `toml:"tunables"`
	Scratch  []scratchTable `toml:"scratch"`
	Kernels  []kernelTable  `toml:"kernels"`
	Backward *struct {
		Scratch []scratchTable `toml:"scratch"`
		Kernels []kernelTable  `toml:"kernels"`
	} `toml:"backward"`
}

type capabilitiesTable struct {
	DTypes            []string `toml:"dtypes"`
	HeadDims          []int    `toml:"head_dims"`
	Causal            bool     `toml:"causal"`
	NonCausal         *bool    `toml:"non_causal"`
	GroupedQueryHeads bool     `toml:"grouped_query_heads"`
	UnequalSeqLens    bool     `toml:"unequal_seq_lens"`
	SeqMultiple       int      `toml:"seq_multiple"`
	MaxSeqLen         int      `toml:"max_seq_len"`
	// Masks are an op table's (window, softcap): attention's kernels
	// take none.
	Masks []string `toml:"masks"`
}

type scratchTable struct {
	Name  string  `toml:"name"`
	Bytes any     `toml:"bytes"`
	Zero  bool    `toml:"zero"`
	Reset *string `toml:"reset"`
}

type kernelTable struct {
	Entry       string             `toml:"entry"`
	Instances   map[string][]int64 `toml:"instances"`
	Grid        []any              `toml:"grid"`
	Block       []any              `toml:"block"`
	SharedBytes any                `toml:"shared_bytes"`
	Params      []string           `toml:"params"`
}

// Load reads and validates the spec file at path. Its errors are
// *suite.Error values (file, line, key), joined: every problem at once.
func Load(path string) (*Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read CUDA-file spec: %w", err)
	}
	return Parse(path, data)
}

// Parse validates the spec file data read from path; relative paths in it
// are relative to path's folder.
func Parse(path string, data []byte) (*Spec, error) {
	var f file
	md, err := toml.Decode(string(data), &f)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, &suite.Error{Path: path, Line: suite.SyntaxLine(string(data), pe.Position), Key: pe.LastKey, Message: pe.Message}
		}
		return nil, &suite.Error{Path: path, Message: err.Error()}
	}
	v := &validator{path: path, doc: string(data), dir: filepath.Dir(path)}
	for _, k := range md.Undecoded() {
		if isSpecKey(k[0]) {
			v.problem(k.String(), -1, "unknown key")
		}
	}
	tables := v.opTables(data)
	spec := v.spec(&f, md, tables)
	if len(v.problems) > 0 {
		return nil, errors.Join(v.problems...)
	}
	return spec, nil
}

type validator struct {
	path, doc, dir string
	problems       []error
	known          map[string]bool // names formulas may use
	scope          *opScope        // the op table being read; nil: attention's kernels
}

// problem records a problem at key, inside the entry-th entry of its array
// of tables (or -1).
func (v *validator) problem(key string, entry int, format string, args ...any) {
	line := tomlpos.KeyLine(v.doc, key, entry)
	if entry >= 0 && line == 0 {
		line = nestedKeyLine(v.doc, key, entry)
	}
	if entry >= 0 && line == 0 {
		line = tomlpos.KeyLine(v.doc, key[:strings.IndexByte(key+".", '.')], entry)
	}
	v.problems = append(v.problems, &suite.Error{Path: v.path, Line: line, Key: key, Message: fmt.Sprintf(format, args...)})
}

func (v *validator) spec(f *file, md toml.MetaData, tables []opTable) *Spec {
	s := &Spec{Path: v.path, Description: f.Description, Options: f.CompilerOptions}
	s.OutputReset = v.resetWord("output_reset", -1, f.OutputReset)
	s.Source, s.Binary = v.kernelFile(f)
	// A spec of op tables alone ([decode], ...) runs no attention: it
	// needs neither [capabilities] nor [[kernels]].
	opsAlone := len(tables) > 0 && len(f.Kernels) == 0 && f.Backward == nil && len(f.Scratch) == 0 && f.OutputReset == nil
	if opsAlone {
		s.Tunables = v.tunables(f)
		if md.IsDefined("capabilities") {
			v.problem("capabilities", -1, "[capabilities] are attention's, and the spec has no [[kernels]] for it: an op's go in its table ([%s.capabilities])", tables[0].name)
		}
		s.Ops = v.ops(tables, s)
		return s
	}
	s.Capabilities = v.capabilities("capabilities", f.Capabilities)
	if len(f.Capabilities.Masks) > 0 {
		v.problem("capabilities.masks", -1, "masks are for an op table's capabilities ([decode.capabilities]); attention's kernels take none")
	}
	s.Tunables = v.tunables(f)
	v.known = formulaNames(s.Tunables)
	s.Scratch = v.scratch("scratch", f.Scratch, tensorParams)
	for _, sc := range s.Scratch {
		v.known[sc.Name] = false // a buffer: a parameter, not a number
	}
	s.Kernels = v.kernels("kernels", f.Kernels, s, tensorParams)
	if f.Backward != nil {
		// The backward's scratch is its own: the forward's names are
		// not buffers of its launches.
		forward := v.known
		v.known = formulaNames(s.Tunables)
		p := &Pass{Scratch: v.scratch("backward.scratch", f.Backward.Scratch, backwardTensors)}
		for _, sc := range p.Scratch {
			v.known[sc.Name] = false
		}
		p.Kernels = v.kernels("backward.kernels", f.Backward.Kernels, s, backwardTensors)
		v.known = forward
		s.Backward = p
		s.Capabilities.Modes = []sdk.Mode{sdk.Forward, sdk.Backward}
	}
	s.Ops = v.ops(tables, s)
	return s
}

// binaryExts are the module images the driver loads as they are.
var binaryExts = []string{".cubin", ".fatbin", ".ptx"}

func (v *validator) kernelFile(f *file) (source, binary string) {
	switch {
	case f.Source == "" && f.Binary == "":
		v.problem("source", -1, "required: name the .cu file (source = \"kernel.cu\") or a prebuilt cubin, fatbin or PTX (binary = ...)")
		return "", ""
	case f.Source != "" && f.Binary != "":
		v.problem("binary", -1, "set source (a .cu file, compiled for the device there) or binary (prebuilt), not both")
		return "", ""
	case f.Source != "":
		if !strings.HasSuffix(f.Source, ".cu") {
			v.problem("source", -1, "%q is not a .cu file", f.Source)
		}
		return v.existing("source", f.Source), ""
	default:
		if !slices.Contains(binaryExts, filepath.Ext(f.Binary)) {
			v.problem("binary", -1, "%q is not a .cubin, .fatbin or .ptx file", f.Binary)
		}
		if len(f.CompilerOptions) > 0 {
			v.problem("compiler_options", -1, "a prebuilt binary is not compiled; compiler_options belong with source")
		}
		return "", v.existing("binary", f.Binary)
	}
}

func (v *validator) existing(key, rel string) string {
	path := rel
	if !filepath.IsAbs(path) {
		path = filepath.Join(v.dir, rel)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		v.problem(key, -1, "%v", err)
		return ""
	}
	info, err := os.Stat(abs)
	switch {
	case errors.Is(err, os.ErrNotExist):
		v.problem(key, -1, "%s: no such file (paths are relative to the spec's folder)", path)
	case err != nil:
		v.problem(key, -1, "%v", err)
	case info.IsDir():
		v.problem(key, -1, "%s is a folder", path)
	}
	return abs
}

// capabilities reads the capabilities table at key ("capabilities", or
// an op table's "decode.capabilities").
func (v *validator) capabilities(key string, in capabilitiesTable) sdk.Capabilities {
	c := sdk.Capabilities{
		HeadDims: in.HeadDims, Causal: in.Causal, NonCausal: in.NonCausal == nil || *in.NonCausal,
		GroupedQueryHeads: in.GroupedQueryHeads, UnequalSeqLens: in.UnequalSeqLens,
		SeqMultiple: in.SeqMultiple, MaxSeqLen: in.MaxSeqLen, NeedsGPU: true,
	}
	if len(in.DTypes) == 0 {
		v.problem(key+".dtypes", -1, "required: list the dtypes the kernels take (fp16, bf16, fp32)")
	}
	for _, d := range in.DTypes {
		dt := sdk.DType(d)
		if dt != sdk.FP16 && dt != sdk.BF16 && dt != sdk.FP32 {
			v.problem(key+".dtypes", -1, "%q is not a dtype (fp16, bf16, fp32)", d)
		}
		c.DTypes = append(c.DTypes, dt)
	}
	for _, d := range in.HeadDims {
		if d <= 0 {
			v.problem(key+".head_dims", -1, "%d is not a head dim", d)
		}
	}
	if !c.Causal && !c.NonCausal {
		v.problem(key+".non_causal", -1, "with causal = false as well, no masking is left to run")
	}
	if c.SeqMultiple < 0 || c.MaxSeqLen < 0 {
		v.problem(key+".seq_multiple", -1, "seq_multiple and max_seq_len must not be negative")
	}
	return c
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (v *validator) tunables(f *file) []sdk.Tunable {
	var out []sdk.Tunable
	for i, t := range f.Tunables {
		switch {
		case !identifier.MatchString(t.Name):
			v.problem("tunables.name", i, "%q is not an identifier (it becomes -D%s=VALUE and a name in formulas)", t.Name, t.Name)
		case isShapeName(t.Name) || slices.ContainsFunc(out, func(o sdk.Tunable) bool { return o.Name == t.Name }):
			v.problem("tunables.name", i, "%q is taken", t.Name)
		}
		if len(t.Values) == 0 {
			v.problem("tunables.values", i, "required: list at least one value")
		}
		for _, val := range t.Values {
			if _, err := strconv.ParseInt(val, 10, 64); err != nil {
				v.problem("tunables.values", i, "%q is not an integer", val)
			}
		}
		def := t.Default
		if def == "" && len(t.Values) > 0 {
			def = t.Values[0]
		}
		if len(t.Values) > 0 && !slices.Contains(t.Values, def) {
			v.problem("tunables.default", i, "%q is not one of the values", def)
		}
		out = append(out, sdk.Tunable{Name: t.Name, Values: t.Values, Default: def, Description: t.Description})
	}
	return out
}

// scratch reads the [[scratch]] tables at key (or [[backward.scratch]]),
// whose names may not be the tensors listed.
func (v *validator) scratch(key string, tables []scratchTable, tensors []string) []Scratch {
	var out []Scratch
	for i, sc := range tables {
		switch {
		case !identifier.MatchString(sc.Name):
			v.problem(key+".name", i, "%q is not an identifier", sc.Name)
		case slices.Contains(tensors, sc.Name) || v.scope == nil && isShapeName(sc.Name) || v.scope != nil && v.scope.taken(sc.Name) || v.known[sc.Name] ||
			slices.ContainsFunc(out, func(o Scratch) bool { return o.Name == sc.Name }):
			v.problem(key+".name", i, "%q is taken", sc.Name)
		}
		bytes, ok := v.formula(key+".bytes", i, sc.Bytes, true)
		reset := v.resetWord(key+".reset", i, sc.Reset)
		switch {
		case sc.Zero && sc.Reset != nil:
			v.problem(key+".reset", i, "set zero = true or reset, not both")
		case sc.Zero:
			reset = new(uint32)
		}
		if ok {
			out = append(out, Scratch{Name: sc.Name, Bytes: bytes, Reset: reset})
		}
	}
	return out
}

// resetWord reads a reset value: a float written as float32 to every
// 4-byte word ("0", "-inf", "inf", "1.5"); nil when absent.
func (v *validator) resetWord(key string, entry int, value *string) *uint32 {
	if value == nil {
		return nil
	}
	x, err := strconv.ParseFloat(strings.TrimSpace(*value), 32)
	if err != nil {
		v.problem(key, entry, "%q is not a number (a float32 written to every 4-byte word: \"0\", \"-inf\", \"1.5\")", *value)
		return nil
	}
	word := math.Float32bits(float32(x))
	if x == 0 {
		word = 0 // "-0" too: zero bytes
	}
	return &word
}

// formula reads a value that is an integer or a formula string.
func (v *validator) formula(key string, entry int, value any, required bool) (Formula, bool) {
	var text string
	switch x := value.(type) {
	case nil:
		if required {
			v.problem(key, entry, "required: an integer or a formula of B, H, H_kv, Sq, Sk, D, ...")
			return Formula{}, false
		}
		text = "0"
	case int64:
		text = strconv.FormatInt(x, 10)
	case string:
		text = x
	default:
		v.problem(key, entry, "want an integer or a formula string, got %v", value)
		return Formula{}, false
	}
	f, err := ParseFormula(text, func(n string) bool { return v.known[n] })
	if err != nil {
		v.problem(key, entry, "%v", err)
		return Formula{}, false
	}
	return f, true
}

func (v *validator) dims(key string, entry int, values []any) [3]Formula {
	var out [3]Formula
	if len(values) == 0 || len(values) > 3 {
		v.problem(key, entry, "want 1 to 3 values (x, y, z), got %d", len(values))
		return out
	}
	for i := range out {
		var value any = int64(1)
		if i < len(values) {
			value = values[i]
		}
		out[i], _ = v.formula(key, entry, value, true)
	}
	return out
}

// kernels reads the [[kernels]] tables at key (or [[backward.kernels]]),
// whose params may name the tensors listed.
func (v *validator) kernels(key string, tables []kernelTable, s *Spec, tensors []string) []Kernel {
	if len(tables) == 0 {
		v.problem(key, -1, "required: at least one [[%s]] entry: entry, grid, block, params", key)
	}
	var out []Kernel
	for i, k := range tables {
		kern := Kernel{Entry: k.Entry}
		if k.Entry == "" {
			v.problem(key+".entry", i, "required: the kernel's symbol, e.g. \"attn_{dtype}_d{D}\"")
		}
		floats := floatParams
		if v.scope != nil {
			v.scope.entry(v, key, i, k.Entry, k.Instances, s)
			floats = v.scope.floats
		} else {
			v.entry(key, i, k.Entry, k.Instances, s)
		}
		kern.Instances = k.Instances
		kern.Grid = v.dims(key+".grid", i, k.Grid)
		kern.Block = v.dims(key+".block", i, k.Block)
		kern.SharedBytes, _ = v.formula(key+".shared_bytes", i, k.SharedBytes, false)
		if k.Params == nil {
			v.problem(key+".params", i, "required: the kernel's parameters in order (docs/cuda.md lists the names)")
		}
		for _, text := range k.Params {
			p, err := parseParamOf(text, v.known, tensors, floats)
			if err != nil {
				v.problem(key+".params", i, "%v", err)
				continue
			}
			kern.Params = append(kern.Params, p)
		}
		out = append(out, kern)
	}
	return out
}

// entry checks an entry's placeholders and, for a template-id, that each
// has values to instantiate it for: the capabilities' dtypes, head dims and
// masking, the tunables, or the kernel's instances table.
func (v *validator) entry(key string, i int, entry string, instances map[string][]int64, s *Spec) {
	names := entryNames(entry)
	for _, name := range names {
		if !placeholderKnown(name, s.Tunables) {
			v.problem(key+".entry", i, "{%s} is not a case parameter (dtype, T, D, causal, H_kv, kv_heads, ...; docs/cuda.md) or a tunable", name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(instances)) {
		values := instances[name]
		switch {
		case !isTemplate(entry):
			v.problem(key+".instances", i, "instances are for a template entry (\"attn<{T}, {D}, {causal}>\"); %q is a symbol", entry)
			return
		case !slices.Contains(shapeNames, name):
			v.problem(key+".instances", i, "%q is not an integer case parameter (H_kv, group, ...)", name)
		case name == "D" || name == "causal":
			v.problem(key+".instances", i, "%s comes from the capabilities (head_dims, causal); it needs no instances", name)
		case len(values) == 0:
			v.problem(key+".instances", i, "%s: list at least one value", name)
		}
	}
	if !isTemplate(entry) {
		return
	}
	for _, written := range names {
		name := written
		if formula, ok := caseNames[name]; ok {
			name = formula
		}
		switch {
		case !placeholderKnown(name, s.Tunables):
		case name == "dtype" || name == "T" || name == "causal" || name == "elem" || instances[name] != nil ||
			slices.ContainsFunc(s.Tunables, func(t sdk.Tunable) bool { return t.Name == name }):
		case name == "D":
			if len(s.Capabilities.HeadDims) == 0 {
				v.problem(key+".entry", i, "{D} in a template entry needs capabilities.head_dims: the head dims to instantiate it for")
			}
		default:
			v.problem(key+".entry", i, "{%s} in a template entry needs the values to instantiate it for: instances = { %s = [...] }", written, name)
		}
	}
}

// placeholders are the {name} parts of an entry.
var placeholders = regexp.MustCompile(`\{([^}]*)\}`)

// nestedKeyLine is the line of key inside the entry-th entry of an array
// of tables that is not top-level ([[decode.kernels]], [[backward.scratch]]:
// key "decode.kernels.grid"), which tomlpos does not count: the line of
// "grid = ..." after the entry's header, else the header's; 0 if none.
func nestedKeyLine(doc, key string, entry int) int {
	dot := strings.LastIndexByte(key, '.')
	if dot < 0 || !strings.Contains(key[:dot], ".") {
		return 0
	}
	array, name := key[:dot], key[dot+1:]
	seen, header := -1, 0
	for i, line := range strings.Split(doc, "\n") {
		text := strings.TrimSpace(line)
		if strings.HasPrefix(text, "[") {
			if header > 0 {
				return header // the entry ends without the key
			}
			if inner, ok := strings.CutPrefix(text, "[["); ok {
				if h, _, ok := strings.Cut(inner, "]]"); ok && strings.TrimSpace(h) == array {
					if seen++; seen == entry {
						header = i + 1
					}
				}
			}
			continue
		}
		if header > 0 {
			if k, _, ok := strings.Cut(text, "="); ok && strings.TrimSpace(k) == name {
				return i + 1
			}
		}
	}
	return header
}
