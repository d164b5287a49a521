package cudakit

import (
	"fmt"
	"time"

	"github.com/flashcore/bench/sdk"
)

// CUPTI's records must cover the device time the events saw, less the
// events' own latency and the gaps between calls (1.2 to 2.5 µs a call on
// an H100, docs/measurement.md). Work the records do not show (a kernel
// that hands its work to child grids, say) would make a kernel look faster
// than it is; where the events' median exceeds CUPTI's by more than
// coverageSlack and by more than coverageShare of the events', the CUPTI
// figure is not used.
const (
	coverageSlack = 5 * time.Microsecond
	coverageShare = 0.10
)

// uncoveredDeviceTime says why CUPTI's samples miss device time the events'
// samples of the same calls saw; "" when they do not.
func uncoveredDeviceTime(events, cupti []time.Duration) string {
	if len(events) == 0 || len(cupti) == 0 {
		return ""
	}
	e, c := sdk.MedianDuration(events), sdk.MedianDuration(cupti)
	gap := e - c
	if gap <= coverageSlack || float64(gap) <= coverageShare*float64(e) {
		return ""
	}
	return fmt.Sprintf("CUPTI's records of the calls' kernels and memsets cover %v of the %v a call the events saw: "+
		"the device ran work CUPTI did not attribute to the calls, so the events' figure is used", c, e)
}
