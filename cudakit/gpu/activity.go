package gpu

// Activity is one device activity: a kernel (its name) or a memset
// ("memset"), its start and end on the device (CUPTI's nanoseconds), and
// the mark of the call that launched it, if any.
type Activity struct {
	Name           string
	StartNs, EndNs uint64
	Mark           uint64
	Marked         bool
}

// DurationNs is the activity's time on the device.
func (a Activity) DurationNs() uint64 {
	if a.EndNs > a.StartNs {
		return a.EndNs - a.StartNs
	}
	return 0
}
