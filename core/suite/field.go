package suite

import (
	"fmt"
	"time"
)

// field is one leaf value of a suite file. It decodes itself (it is a
// toml.Unmarshaler), so a value of the wrong type is reported in words a user
// reads ("want an integer, got a string") with the key the decoder was at,
// and so Set tells an absent key from a zero value.
type field[T any] struct {
	Value T
	Set   bool
}

// UnmarshalTOML converts one decoded TOML value into the field's type.
func (f *field[T]) UnmarshalTOML(data any) error {
	var err error
	switch p := any(&f.Value).(type) {
	case *string:
		*p, err = asString(data)
	case *bool:
		*p, err = asBool(data)
	case *int:
		*p, err = asInt(data)
	case *int64:
		*p, err = asInt64(data)
	case *float64:
		*p, err = asFloat(data)
	case *time.Duration:
		*p, err = asDuration(data)
	case *[]string:
		*p, err = listOf(data, "strings", asString)
	case *[]bool:
		*p, err = listOf(data, "booleans", asBool)
	case *[]int:
		*p, err = listOf(data, "integers", asInt)
	default:
		return fmt.Errorf("suite: no decoder for %T", f.Value)
	}
	f.Set = err == nil
	return err
}

// Or returns the value when the key was set and fallback otherwise.
func (f field[T]) Or(fallback T) T {
	if f.Set {
		return f.Value
	}
	return fallback
}

func asString(data any) (string, error) {
	if s, ok := data.(string); ok {
		return s, nil
	}
	return "", wrongType("a string", data)
}

func asBool(data any) (bool, error) {
	if b, ok := data.(bool); ok {
		return b, nil
	}
	return false, wrongType("a boolean (true or false)", data)
}

func asInt64(data any) (int64, error) {
	if n, ok := data.(int64); ok {
		return n, nil
	}
	return 0, wrongType("an integer", data)
}

func asInt(data any) (int, error) {
	n, err := asInt64(data)
	if err != nil {
		return 0, err
	}
	if int64(int(n)) != n {
		return 0, fmt.Errorf("%d is out of range", n)
	}
	return int(n), nil
}

// asFloat accepts integers too: "atol = 0" is a float setting written as an
// integer.
func asFloat(data any) (float64, error) {
	switch v := data.(type) {
	case float64:
		return v, nil
	case int64:
		return float64(v), nil
	}
	return 0, wrongType("a number", data)
}

// asDuration accepts only Go duration strings. The TOML library would read a
// bare integer as nanoseconds, which turns time_cap = 2 into 2ns.
func asDuration(data any) (time.Duration, error) {
	s, ok := data.(string)
	if !ok {
		return 0, wrongType(`a duration string such as "50ms"`, data)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf(`bad duration %q: want a number with a unit, such as "50ms" or "2s"`, s)
	}
	return d, nil
}

func listOf[T any](data any, what string, convert func(any) (T, error)) ([]T, error) {
	items, ok := data.([]any)
	if !ok {
		return nil, wrongType("an array of "+what, data)
	}
	out := make([]T, len(items))
	for i, item := range items {
		v, err := convert(item)
		if err != nil {
			return nil, fmt.Errorf("element %d: %w", i, err)
		}
		out[i] = v
	}
	return out, nil
}

func wrongType(want string, data any) error {
	got := tomlTypeName(data)
	if s, ok := data.(string); ok {
		got = fmt.Sprintf("a string (%q)", s)
	}
	return fmt.Errorf("want %s, got %s", want, got)
}

// tomlTypeName names the TOML type of a decoded value.
func tomlTypeName(data any) string {
	switch data.(type) {
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case []any:
		return "an array"
	case map[string]any:
		return "a table"
	case []map[string]any:
		return "an array of tables"
	}
	return "a date-time"
}
