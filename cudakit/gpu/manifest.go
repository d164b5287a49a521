package gpu

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Manifest describes a fatbin as scripts/compile-kernels.sh built it. It is
// embedded next to the fatbin, together with the sources, so that a binary
// can prove its kernels were built from the sources it carries.
type Manifest struct {
	Schema       int              `json:"schema"`
	Kernel       string           `json:"kernel"` // repository path of the .cu
	FatbinSHA256 string           `json:"fatbin_sha256"`
	SourceSHA256 string           `json:"source_sha256"` // see SourceHash
	Sources      []ManifestSource `json:"sources"`       // the .cu and every repository header it includes
	NVCCVersion  string           `json:"nvcc_version"`
	Flags        []string         `json:"flags"`
	Gencode      []string         `json:"gencode"`
	Cubins       []string         `json:"cubins"` // e.g. sm_90
	PTX          []string         `json:"ptx"`    // e.g. compute_90
}

// ManifestSource is one source file of a fatbin.
type ManifestSource struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// StalePrefix starts every error of Manifest.Verify.
const StalePrefix = "stale kernel binary: "

// ParseManifest decodes a manifest, rejecting unknown fields and missing
// required ones.
func ParseManifest(data []byte) (Manifest, error) {
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return Manifest{}, fmt.Errorf("kernel manifest: %w", err)
	}
	switch {
	case m.Schema != 1:
		return Manifest{}, fmt.Errorf("kernel manifest: schema %d, want 1", m.Schema)
	case m.Kernel == "" || m.FatbinSHA256 == "" || m.SourceSHA256 == "" || len(m.Sources) == 0:
		return Manifest{}, errors.New("kernel manifest: kernel, fatbin_sha256, source_sha256 and sources are required")
	case len(m.Cubins) == 0 && len(m.PTX) == 0:
		return Manifest{}, errors.New("kernel manifest: lists neither cubins nor ptx")
	}
	return m, nil
}

// SourceHash is the hash a manifest records as source_sha256: the SHA-256 of
// the lines "<hex sha256 of file>  <path>\n", sorted by path (what sha256sum
// prints for the files).
func SourceHash(files map[string][]byte) string {
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	var listing strings.Builder
	for _, p := range paths {
		fmt.Fprintf(&listing, "%s  %s\n", sha256Hex(files[p]), p)
	}
	return sha256Hex([]byte(listing.String()))
}

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// Verify checks that fatbin is the one the manifest describes and that
// every source the manifest lists is embedded, byte for byte, in sources
// (keyed by repository path; extra entries are ignored). Any difference
// means the fatbin was built from other sources than the binary carries:
// the error starts with StalePrefix and says what to run.
func (m Manifest) Verify(fatbin []byte, sources map[string][]byte) error {
	const rebuild = "; rebuild with `make cuda-kernels` and then the plugin"
	if got := sha256Hex(fatbin); got != m.FatbinSHA256 {
		return fmt.Errorf("%sthe embedded fatbin of %s (sha256 %s) is not the one its manifest describes (%s)%s",
			StalePrefix, m.Kernel, short(got), short(m.FatbinSHA256), rebuild)
	}
	listed := make(map[string][]byte, len(m.Sources))
	kernelListed := false
	for _, src := range m.Sources {
		content, ok := sources[src.Path]
		if !ok {
			return fmt.Errorf("%sthe fatbin of %s was built from %s, which this binary does not embed%s",
				StalePrefix, m.Kernel, src.Path, rebuild)
		}
		if got := sha256Hex(content); got != src.SHA256 {
			return fmt.Errorf("%s%s changed since the fatbin was built (built from %s, embedded source is %s)%s",
				StalePrefix, src.Path, short(src.SHA256), short(got), rebuild)
		}
		listed[src.Path] = content
		kernelListed = kernelListed || src.Path == m.Kernel
	}
	if !kernelListed {
		return fmt.Errorf("%sthe manifest of %s does not list the kernel source itself", StalePrefix, m.Kernel)
	}
	if got := SourceHash(listed); got != m.SourceSHA256 {
		return fmt.Errorf("%sthe source hash of %s (%s) does not match its manifest (%s)%s",
			StalePrefix, m.Kernel, short(got), short(m.SourceSHA256), rebuild)
	}
	return nil
}

func short(hash string) string {
	if len(hash) > 12 {
		return hash[:12]
	}
	return hash
}

// Target is the code the driver runs for a fatbin on one device.
type Target struct {
	Arch string // "sm_90" for a cubin, "compute_90" for PTX
	JIT  bool   // true: PTX compiled by the driver at load time
}

func (t Target) String() string {
	if t.JIT {
		return "PTX " + t.Arch + " JIT"
	}
	return t.Arch + " cubin"
}

// TargetFor picks what the driver loads on a device of compute capability
// major.minor, by the driver's rule: the cubin of the same major version
// with the highest minor not above the device's; otherwise the newest PTX
// not newer than the device, compiled just in time. ok is false when the
// fatbin has nothing the device can run.
func (m Manifest) TargetFor(major, minor int) (target Target, ok bool) {
	device := major*10 + minor
	best, bestCubin := -1, ""
	for _, c := range m.Cubins {
		v, err := archVersion(c, "sm_")
		if err == nil && v/10 == major && v <= device && v > best {
			best, bestCubin = v, c // "sm_90a" stays itself
		}
	}
	if best >= 0 {
		return Target{Arch: bestCubin}, true
	}
	for _, p := range m.PTX {
		v, err := archVersion(p, "compute_")
		if err == nil && v <= device && v > best {
			best = v
		}
	}
	if best >= 0 {
		return Target{Arch: fmt.Sprintf("compute_%d", best), JIT: true}, true
	}
	return Target{}, false
}

// archVersion parses "sm_90" or "compute_90" to 90.
func archVersion(arch, prefix string) (int, error) {
	digits, ok := strings.CutPrefix(arch, prefix)
	if !ok {
		return 0, fmt.Errorf("arch %q lacks prefix %q", arch, prefix)
	}
	return strconv.Atoi(strings.TrimRight(digits, "af"))
}
