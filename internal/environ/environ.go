// Package environ reads an environment given as KEY=VALUE strings (as
// os.Environ and exec.Cmd.Env hold it), the way exec takes it.
package environ

import "strings"

// Value is key's value in env, the last one where it is set twice (as
// exec takes it); "" where it is not set.
func Value(env []string, key string) string {
	value := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			value = v
		}
	}
	return value
}
