//go:build cuda

package gpu

import (
	"time"

	"gorgonia.org/cu"
)

// Event is a CUDA event with timing enabled.
type Event struct {
	ev cu.Event
}

// NewEvent creates an event in the current context.
func NewEvent() (*Event, error) {
	ev, err := cu.MakeEvent(cu.DefaultEvent)
	if err != nil {
		return nil, wrap("create event", err)
	}
	return &Event{ev: ev}, nil
}

// Record queues the event on the default stream.
func (e *Event) Record() error { return wrap("record event", e.ev.Record(cu.NoStream)) }

// Synchronize waits until the event has happened.
func (e *Event) Synchronize() error { return wrap("wait for event", e.ev.Synchronize()) }

// Destroy frees the event; nil is a no-op.
func (e *Event) Destroy() error {
	if e == nil {
		return nil
	}
	return wrap("destroy event", cu.DestroyEvent(&e.ev))
}

// Elapsed is the device time between two recorded events (resolution about
// half a microsecond, as the driver reports it).
func Elapsed(start, stop *Event) (time.Duration, error) {
	ms, err := start.ev.Elapsed(stop.ev)
	if err != nil {
		return 0, wrap("read event time", err)
	}
	return time.Duration(ms * float64(time.Millisecond)), nil
}
