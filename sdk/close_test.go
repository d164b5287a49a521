package sdk

import (
	"errors"
	"testing"
)

// closing records which of its closes Serve called.
type closing struct {
	Backend
	closed, closedForExit *int
}

func (c closing) Close() error { *c.closed++; return nil }

type exitClosing struct{ closing }

func (c exitClosing) CloseForExit() error { *c.closedForExit++; return errors.New("left to the exit") }

// bare is a backend with neither close.
type bare struct{ Backend }

// As its process exits, a backend is closed by CloseForExit where it has
// one, else by Close, else not at all; CloseForExit's error is returned.
func TestCloseForExit(t *testing.T) {
	for _, tc := range []struct {
		name              string
		make              func(closed, forExit *int) Backend
		wantClose, wantFE int
		wantErr           bool
	}{
		{"closer", func(c, f *int) Backend { return closing{closed: c, closedForExit: f} }, 1, 0, false},
		{"exit closer", func(c, f *int) Backend { return exitClosing{closing{closed: c, closedForExit: f}} }, 0, 1, true},
		{"neither", func(c, f *int) Backend { return bare{} }, 0, 0, false},
		{"none served", func(c, f *int) Backend { return nil }, 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var closed, forExit int
			err := closeForExit(tc.make(&closed, &forExit))
			if closed != tc.wantClose || forExit != tc.wantFE || (err != nil) != tc.wantErr {
				t.Errorf("Close %d, CloseForExit %d, error %v; want %d, %d, error %v",
					closed, forExit, err, tc.wantClose, tc.wantFE, tc.wantErr)
			}
		})
	}
}
