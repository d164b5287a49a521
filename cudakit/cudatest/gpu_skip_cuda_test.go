//go:build cuda

package cudatest

// In cuda builds this test binary links gorgonia.org/cu, whose init exits
// the process on a machine without a GPU; gputest skips cleanly first.
import _ "github.com/flashcore/bench/cudakit/gpu/gputest"
