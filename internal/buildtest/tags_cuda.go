//go:build cuda

package buildtest

// buildTags are the tags this test binary was built with that plugins need
// too: a cuda-tagged test builds the CUDA plugins with CUDA.
const buildTags = "cuda"
