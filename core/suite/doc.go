// Package suite reads benchmark suites: TOML files that list the cases to
// run, of any op (op = "attention" when an entry names none), how to
// measure them and how strictly to check them (docs/suites.md).
//
// Where to start: [Load] reads a file, [Parse] reads bytes, [Default] is the
// suite built into the binary. Reading follows three steps:
//
//  1. defaults: every setting starts at its documented default;
//  2. decoding: the TOML is decoded over the defaults, and a key the format
//     does not know, a value of the wrong type or a bad duration is an error;
//     the keys of a [[sweeps]] or [[cases]] entry are those its op
//     declares (op.Spec's axes, plus op and distribution);
//  3. validation: values are checked against each other (sizes are
//     positive, and the op's own rules, such as kv_heads dividing heads)
//     and the sweeps are expanded into op.Cases with stable IDs, the same
//     way for every op (opentry.go).
//
// Every error from a user's file is an [*Error] that names the file, the line
// and the dotted key, as in
//
//	suites/x.toml:7: key "measurement.warmup_tme": unknown key
package suite
