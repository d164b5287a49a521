//go:build !cuda

package buildtest

// buildTags: see tags_cuda.go.
const buildTags = ""
