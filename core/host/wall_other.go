//go:build !linux

package host

import "errors"

// landlockABI is 0: Landlock is Linux's.
func landlockABI() int { return 0 }

func (w wallRules) confine() error { return errors.New("landlock is Linux's") }
