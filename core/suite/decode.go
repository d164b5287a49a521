package suite

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/flashcore/bench/core/tomlpos"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops"
)

// decoder reads one suite file. It holds what error messages need: the
// file's name, the lines of its keys, and the problems found so far.
type decoder struct {
	path     string
	doc      string
	lines    *tomlpos.Lines
	problems []error
}

// decoded is a suite file after step 2: the schema with its arrays of
// tables decoded entry by entry.
type decoded struct {
	file       fileSuite
	tolerances fileTolerances
	backends   []fileBackend
	sweeps     []fileOpEntry
	cases      []fileOpEntry
}

func newDecoder(path string, data []byte) *decoder {
	return &decoder{path: path, doc: string(data)}
}

// decode applies defaults and decodes the file over them, rejecting syntax
// errors, wrong types and unknown keys.
func (d *decoder) decode() (*decoded, error) {
	var syntax map[string]any
	if _, err := toml.Decode(d.doc, &syntax); err != nil {
		return nil, d.syntaxError(err)
	}
	d.lines = tomlpos.Scan(d.doc)
	out := &decoded{file: defaultFile()}
	md, err := toml.Decode(d.doc, &out.file)
	if err != nil {
		return nil, d.valueError(err, -1)
	}
	if err := d.mustBeTable(&md, "tolerance"); err != nil {
		return nil, err
	}
	if out.tolerances, err = decodeTolerances(d, &md, out.file.Tolerance); err != nil {
		return nil, err
	}
	if out.backends, err = decodeEntries(d, &md, out.file.Backends, func() fileBackend { return fileBackend{} }); err != nil {
		return nil, err
	}
	var unknownInSweeps, unknownInCases []toml.Key
	var wrongInSweeps, wrongInCases []*Error
	if out.sweeps, unknownInSweeps, wrongInSweeps, err = d.decodeOpEntries(&md, "sweeps", out.file.Sweeps, true); err != nil {
		return nil, err
	}
	if out.cases, unknownInCases, wrongInCases, err = d.decodeOpEntries(&md, "cases", out.file.Cases, false); err != nil {
		return nil, err
	}
	// The op entries' unknown keys go first: the TOML library leaves the
	// keys inside such a key's inline table undecoded, and a key under one
	// reported is not reported again. Their values of the wrong type are
	// reported with them, in file order.
	unknown := slices.Concat(unknownInSweeps, unknownInCases, md.Undecoded(), upperCaseKeys(md.Keys()))
	if err := d.unknownKeys(unknown, slices.Concat(wrongInSweeps, wrongInCases)...); err != nil {
		return nil, err
	}
	return out, nil
}

// mustBeTable rejects a plain value where a table of tables belongs. The
// TOML library drops such a value without an error when it decodes into a
// map.
func (d *decoder) mustBeTable(md *toml.MetaData, key string) error {
	if t := md.Type(key); t != "" && t != "Hash" {
		return d.problemAt(key, -1, fmt.Sprintf("want a table, written [%s.<name>]", key))
	}
	return nil
}

// decodeTolerances decodes the [tolerance] tables: [tolerance.<op>] holds
// tables of that op's outputs, each of dtypes; any other name is a dtype's
// table.
func decodeTolerances(d *decoder, md *toml.MetaData, tables map[string]toml.Primitive) (fileTolerances, error) {
	out := fileTolerances{dtypes: map[string]fileTolerance{}, outputs: map[string]map[string]map[string]fileTolerance{}}
	for name, table := range tables {
		_, err := ops.Lookup(name)
		if isOp := err == nil; isOp {
			var outputs map[string]map[string]fileTolerance
			err = md.PrimitiveDecode(table, &outputs)
			out.outputs[name] = outputs
		} else {
			var t fileTolerance
			err = md.PrimitiveDecode(table, &t)
			out.dtypes[name] = t
		}
		if err != nil {
			return out, d.valueError(err, -1)
		}
	}
	return out, nil
}

// decodeEntries decodes the entries of one array of tables, each over its
// defaults.
func decodeEntries[T any](d *decoder, md *toml.MetaData, entries []toml.Primitive, defaults func() T) ([]T, error) {
	out := make([]T, len(entries))
	for i, entry := range entries {
		out[i] = defaults()
		if err := md.PrimitiveDecode(entry, &out[i]); err != nil {
			return nil, d.valueError(err, i)
		}
	}
	return out, nil
}

// decodeOpEntries decodes the [[sweeps]] or [[cases]] entries (table)
// the same way for every op: each keeps its keys as read, and a key of the
// op (an axis, op or distribution) must hold a value of its axis's type, a
// list of them in a sweep. It returns, besides the entries, the keys the
// op has no axis for and the keys whose value is of the wrong type, to be
// reported with every other unknown key. An entry of an unknown op is kept
// whole; building the cases reports it.
func (d *decoder) decodeOpEntries(md *toml.MetaData, table string, entries []toml.Primitive, sweep bool) ([]fileOpEntry, []toml.Key, []*Error, error) {
	out := make([]fileOpEntry, len(entries))
	var unknown []toml.Key
	var wrong []*Error
	for i, entry := range entries {
		var head struct {
			Op field[string] `toml:"op"`
		}
		if err := md.PrimitiveDecode(entry, &head); err != nil {
			return nil, nil, nil, d.valueError(err, i)
		}
		out[i].op = head.Op.Or(ops.Default)
		if err := md.PrimitiveDecode(entry, &out[i].values); err != nil {
			return nil, nil, nil, d.valueError(err, i)
		}
		o, err := ops.Lookup(out[i].op)
		if err != nil {
			continue
		}
		for _, key := range d.inFileOrder(table, i, out[i].values) {
			if key == "op" {
				continue // read with the entry's head
			}
			want, known := valueType(o.Spec(), key)
			if !known {
				unknown = append(unknown, toml.Key{table, key})
				continue
			}
			if err := want.check(out[i].values[key], sweep); err != nil {
				wrong = append(wrong, d.problemAt(table+"."+key, i, err.Error()))
			}
		}
	}
	return out, unknown, wrong, nil
}

// inFileOrder returns the keys of an entry in the order the file sets them.
func (d *decoder) inFileOrder(table string, entry int, values map[string]any) []string {
	keys := slices.Sorted(maps.Keys(values))
	slices.SortStableFunc(keys, func(a, b string) int {
		return d.lines.Find(table+"."+a, entry) - d.lines.Find(table+"."+b, entry)
	})
	return keys
}

// entryType is the type of one key of an op entry: one value is checked
// by one, a sweep's list is of plural.
type entryType struct {
	one    func(any) error
	plural string
}

var (
	intType    = entryType{func(v any) error { _, err := asInt(v); return err }, "integers"}
	boolType   = entryType{func(v any) error { _, err := asBool(v); return err }, "booleans"}
	stringType = entryType{func(v any) error { _, err := asString(v); return err }, "strings"}
	floatType  = entryType{func(v any) error { _, err := asFloat(v); return err }, "numbers"}
)

// valueType is the type of a key of an op entry: its axis's, or a name's
// for distribution. known is false for a key the op has no place for.
func valueType(spec op.Spec, key string) (t entryType, known bool) {
	if key == "distribution" {
		return stringType, true
	}
	a, ok := spec.Axis(key)
	switch a.Kind {
	case op.Int, op.Window:
		return intType, ok
	case op.Float:
		return floatType, ok
	case op.Bool:
		return boolType, ok
	}
	return stringType, ok
}

// check reports a value not of type t, in the words of every other key of
// the file (field.go).
func (t entryType) check(data any, sweep bool) error {
	if !sweep {
		return t.one(data)
	}
	_, err := listOf(data, t.plural, func(v any) (struct{}, error) { return struct{}{}, t.one(v) })
	return err
}

func (d *decoder) syntaxError(err error) error {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		return &Error{Path: d.path, Line: SyntaxLine(d.doc, pe.Position), Message: "TOML syntax: " + pe.Message}
	}
	return &Error{Path: d.path, Message: "TOML syntax: " + err.Error()}
}

// SyntaxLine is the line of a TOML parse error in doc: the line of its
// first byte. The TOML library's own line is the next one when the error is the
// newline that ends a line ("[[cases]" left open, "seed =" with no
// value): its lexer has counted that newline already.
func SyntaxLine(doc string, p toml.Position) int {
	if p.Start <= 0 || p.Start > len(doc) {
		return p.Line
	}
	return 1 + strings.Count(doc[:p.Start], "\n")
}

// lastKey matches the errors BurntSushi/toml makes itself (not through a
// field's UnmarshalTOML): a table or an array of tables given a plain value.
var lastKey = regexp.MustCompile(`\(last key ("(?:[^"\\]|\\.)*")\): (.*)$`)

// valueError turns an error of step 2 into an *Error. entry is the index of
// the array-of-tables entry being decoded, or -1.
func (d *decoder) valueError(err error, entry int) error {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		return d.problemAt(pe.LastKey, entry, pe.Message)
	}
	m := lastKey.FindStringSubmatch(err.Error())
	if m == nil {
		return &Error{Path: d.path, Message: strings.TrimPrefix(err.Error(), "toml: ")}
	}
	key, _ := strconv.Unquote(m[1])
	message := m[2]
	switch {
	case strings.Contains(message, "destination has type slice"),
		entry >= 0 && !strings.Contains(key, "."):
		message = fmt.Sprintf("want an array of tables, written [[%s]]", key)
	case strings.Contains(message, "expected table"), strings.Contains(message, "destination has type map"):
		message = fmt.Sprintf("want a table, written [%s]", key)
	}
	return d.problemAt(key, entry, message)
}

// unknownKeys reports every key the schema has no place for, in file
// order, each once, with the other problems given (values of the wrong
// type). A key under an unknown table is not reported again.
func (d *decoder) unknownKeys(keys []toml.Key, others ...*Error) error {
	problems := slices.Clone(others)
	reported := map[string]bool{}
	for _, key := range keys {
		name := key.String()
		if underReported(key, reported) {
			continue
		}
		reported[name] = true
		message := "unknown key"
		if name != strings.ToLower(name) {
			message = "unknown key (keys are lower-case)"
		}
		problems = append(problems, d.problemAt(name, -1, message))
	}
	slices.SortStableFunc(problems, func(a, b *Error) int { return a.Line - b.Line })
	errs := make([]error, len(problems))
	for i, p := range problems {
		errs[i] = p
	}
	return errors.Join(errs...)
}

// underReported tells whether key or a table holding it was reported.
func underReported(key toml.Key, reported map[string]bool) bool {
	for n := 1; n <= len(key); n++ {
		if reported[key[:n].String()] {
			return true
		}
	}
	return false
}

// upperCaseKeys returns the keys that differ from a schema key only in
// case. The TOML library matches struct fields case-insensitively, so
// "Warmup_Runs" would be taken silently; every key of the format is
// lower-case. Tunable names belong to the backends and keep their case.
func upperCaseKeys(keys []toml.Key) []toml.Key {
	var out []toml.Key
	for _, key := range keys {
		schema := key
		if len(key) > 2 && key[0] == "backends" && key[1] == "tunables" {
			schema = key[:2]
		}
		if s := schema.String(); s != strings.ToLower(s) {
			out = append(out, key)
		}
	}
	return out
}

// problemAt returns the *Error of key in entry (-1: any entry).
func (d *decoder) problemAt(key string, entry int, message string) *Error {
	return &Error{Path: d.path, Line: d.lines.Find(key, entry), Key: key, Message: message}
}

// problem records a validation problem; validation goes on, so a user sees
// every problem of the file at once.
func (d *decoder) problem(key string, entry int, format string, args ...any) {
	d.problems = append(d.problems, d.problemAt(key, entry, fmt.Sprintf(format, args...)))
}
