package sdk

import (
	"context"
	"errors"
)

// Unavailable is a backend that cannot run here and says why: it describes
// itself as unavailable with reason, and every call that would run a case
// fails with it. A plugin that finds at start-up that it cannot work (no
// kernel file given, a spec that does not validate) serves one, so the
// host shows the reason instead of a plugin that would not start.
func Unavailable(name, reason string) Backend { return unavailable{name, reason} }

type unavailable struct{ name, reason string }

func (u unavailable) Describe(context.Context) (Description, error) {
	return Description{Name: u.name, Available: false, UnavailableReason: u.reason}, nil
}

func (u unavailable) Prepare(context.Context, PrepareRequest) (Prepared, error) {
	return Prepared{}, errors.New(u.reason)
}

func (u unavailable) Fetch(context.Context, FetchRequest) (Fetched, error) {
	return Fetched{}, errors.New(u.reason)
}

func (u unavailable) Run(context.Context, RunRequest) (Samples, error) {
	return Samples{}, errors.New(u.reason)
}

func (u unavailable) Release(context.Context, ReleaseRequest) error { return nil }
