package runner

import (
	"testing"

	"github.com/flashcore/bench/sdk"
)

func TestDriverVersionsComeFromEitherKindOfBackend(t *testing.T) {
	gpus := []sdk.Device{
		{Kind: "gpu", Name: "H100", Driver: "CUDA 13.0"},
		{Kind: "gpu", Name: "H100", Driver: "580.159.04"},
	}
	driver, cuda := driverVersions(gpus)
	if driver != "580.159.04" || cuda != "13.0" {
		t.Errorf("driverVersions = %q, %q", driver, cuda)
	}
	if d, c := driverVersions(nil); d != "" || c != "" {
		t.Errorf("no GPUs: %q, %q", d, c)
	}
}

func TestLabelNamesTunablesInOrder(t *testing.T) {
	got := label("cuda-v8", map[string]string{"tile_n": "64", "kv_stages": "1"})
	if got != "cuda-v8[kv_stages=1,tile_n=64]" {
		t.Errorf("label = %q", got)
	}
}
