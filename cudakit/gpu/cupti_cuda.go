//go:build cuda

package gpu

// CUPTI's activity API, loaded at run time: the device start and end of
// every kernel and memset, each tied to the call FlashCore marked with an
// external correlation id when it launched it. The CUDA plugins take their
// kernel time from these records (cudakit,
// docs/measurement.md), and flashcore verify-timing its reference.
//
// The plugins do not link CUPTI: it is opened with dlopen on the first
// Run, so a machine without it times by events as before. The records are
// read at the offsets of cupti_layout.h.

/*
#cgo LDFLAGS: -ldl -lpthread
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cupti_layout.h"

typedef void (*fc_request_fn)(uint8_t**, size_t*, size_t*);
typedef void (*fc_complete_fn)(void*, uint32_t, uint8_t*, size_t, size_t);

static struct {
	void* lib;
	int (*enable)(int);
	int (*reg)(fc_request_fn, fc_complete_fn);
	int (*next)(uint8_t*, size_t, uint8_t**);
	int (*flush)(uint32_t);
	int (*push)(int, uint64_t);
	int (*pop)(int, uint64_t*);
	int (*result)(int, const char**);
	int (*dropped)(void*, uint32_t, size_t*);
} fc_cupti;

// fc_record is one activity as FlashCore keeps it. kind is the CUPTI kind;
// for an external correlation, start is the external id.
typedef struct {
	uint32_t kind;
	uint32_t correlation;
	uint64_t start, end;
	const char* name;
} fc_record;

static pthread_mutex_t fc_mu = PTHREAD_MUTEX_INITIALIZER;
static fc_record* fc_records;
static size_t fc_len, fc_cap;
static size_t fc_dropped, fc_lost;

// Kernel names, copied once each: CUPTI shares one string per kernel.
#define FC_NAMES 256
static const char* fc_name_from[FC_NAMES];
static char* fc_name_copy[FC_NAMES];
static int fc_names;

static const char* fc_intern(const char* name) {
	if (name == 0) return "?";
	for (int i = 0; i < fc_names; i++) {
		if (fc_name_from[i] == name) return fc_name_copy[i];
	}
	if (fc_names == FC_NAMES) return "?";
	char* copy = strdup(name);
	if (copy == 0) return "?";
	fc_name_from[fc_names] = name;
	fc_name_copy[fc_names] = copy;
	fc_names++;
	return copy;
}

#define FC_BUFFER_BYTES (8u << 20)

static void fc_request(uint8_t** buffer, size_t* size, size_t* max_records) {
	void* b = 0;
	if (posix_memalign(&b, 8, FC_BUFFER_BYTES) != 0) b = 0;
	*buffer = (uint8_t*)b;
	*size = b ? FC_BUFFER_BYTES : 0;
	*max_records = 0;
}

static void fc_keep(fc_record r) {
	if (fc_len == fc_cap) {
		size_t cap = fc_cap ? 2 * fc_cap : 4096;
		fc_record* grown = (fc_record*)realloc(fc_records, cap * sizeof(fc_record));
		if (grown == 0) { fc_lost++; return; }
		fc_records = grown;
		fc_cap = cap;
	}
	fc_records[fc_len++] = r;
}

#define FC_AT(p, off, type) (*(const type*)((p) + (off)))

static void fc_complete(void* ctx, uint32_t stream, uint8_t* buffer, size_t size, size_t valid) {
	pthread_mutex_lock(&fc_mu);
	uint8_t* rec = 0;
	while (valid > 0 && fc_cupti.next(buffer, valid, &rec) == 0) {
		fc_record r = {0};
		r.kind = FC_AT(rec, 0, uint32_t);
		switch (r.kind) {
		case FC_CUPTI_KIND_KERNEL:
		case FC_CUPTI_KIND_CONCURRENT_KERNEL:
			r.start = FC_AT(rec, FC_KERNEL_START, uint64_t);
			r.end = FC_AT(rec, FC_KERNEL_END, uint64_t);
			r.correlation = FC_AT(rec, FC_KERNEL_CORRELATION, uint32_t);
			r.name = fc_intern(FC_AT(rec, FC_KERNEL_NAME, const char*));
			fc_keep(r);
			break;
		case FC_CUPTI_KIND_MEMSET:
			r.start = FC_AT(rec, FC_MEMSET_START, uint64_t);
			r.end = FC_AT(rec, FC_MEMSET_END, uint64_t);
			r.correlation = FC_AT(rec, FC_MEMSET_CORRELATION, uint32_t);
			r.name = "memset";
			fc_keep(r);
			break;
		case FC_CUPTI_KIND_EXTERNAL_CORRELATION:
			if (FC_AT(rec, FC_EXTERNAL_KIND, uint32_t) != FC_CUPTI_EXTERNAL_CUSTOM0) break;
			r.start = FC_AT(rec, FC_EXTERNAL_ID, uint64_t);
			r.correlation = FC_AT(rec, FC_EXTERNAL_CORRELATION, uint32_t);
			fc_keep(r);
			break;
		}
	}
	size_t dropped = 0;
	if (fc_cupti.dropped != 0 && fc_cupti.dropped(ctx, stream, &dropped) == 0) fc_dropped += dropped;
	pthread_mutex_unlock(&fc_mu);
	free(buffer);
}

#define FC_SYM(field, name) \
	*(void**)(&fc_cupti.field) = dlsym(lib, name); \
	if (fc_cupti.field == 0) { snprintf(err, errlen, "%s has no %s", path, name); dlclose(lib); return 0; }

// fc_cupti_open loads CUPTI from path; 0 and a reason in err on failure.
static int fc_cupti_open(const char* path, char* err, size_t errlen) {
	void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (lib == 0) {
		const char* why = dlerror();
		snprintf(err, errlen, "%s", why ? why : path);
		return 0;
	}
	FC_SYM(enable, "cuptiActivityEnable");
	FC_SYM(reg, "cuptiActivityRegisterCallbacks");
	FC_SYM(next, "cuptiActivityGetNextRecord");
	FC_SYM(flush, "cuptiActivityFlushAll");
	FC_SYM(push, "cuptiActivityPushExternalCorrelationId");
	FC_SYM(pop, "cuptiActivityPopExternalCorrelationId");
	FC_SYM(result, "cuptiGetResultString");
	*(void**)(&fc_cupti.dropped) = dlsym(lib, "cuptiActivityGetNumDroppedRecords");
	fc_cupti.lib = lib;
	return 1;
}

static const char* fc_cupti_result(int r) {
	const char* s = 0;
	if (fc_cupti.result == 0 || fc_cupti.result(r, &s) != 0 || s == 0) return "";
	return s;
}

static int fc_cupti_start(void) {
	int r = fc_cupti.reg(fc_request, fc_complete);
	if (r != 0) return r;
	// External correlation records come with the driver API's records,
	// which are enabled for that and otherwise ignored.
	int kinds[] = {FC_CUPTI_KIND_CONCURRENT_KERNEL, FC_CUPTI_KIND_MEMSET, FC_CUPTI_KIND_DRIVER,
		FC_CUPTI_KIND_EXTERNAL_CORRELATION};
	for (int i = 0; i < 4; i++) {
		if ((r = fc_cupti.enable(kinds[i])) != 0) return r;
	}
	return 0;
}

static int fc_cupti_push(uint64_t id) { return fc_cupti.push(FC_CUPTI_EXTERNAL_CUSTOM0, id); }
static int fc_cupti_pop(void) { uint64_t id; return fc_cupti.pop(FC_CUPTI_EXTERNAL_CUSTOM0, &id); }
static int fc_cupti_flush(void) { return fc_cupti.flush(FC_CUPTI_FLUSH_FORCED); }

// fc_cupti_take moves the kept records out: the caller frees *out.
static size_t fc_cupti_take(fc_record** out, size_t* dropped, size_t* lost) {
	pthread_mutex_lock(&fc_mu);
	size_t n = fc_len;
	*out = fc_records;
	*dropped = fc_dropped;
	*lost = fc_lost;
	fc_records = 0;
	fc_len = fc_cap = fc_dropped = fc_lost = 0;
	pthread_mutex_unlock(&fc_mu);
	return n;
}
*/
import "C"

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"unsafe"
)

// ActivityTrace records the kernels and memsets the process runs, each
// with the mark of the call that launched it (Mark and Unmark). There is
// one per process: CUPTI's activity buffers are process-wide. Mark and
// Unmark are per thread (CUPTI keeps the external correlation stack per
// thread): call them on the thread that launches, inside Worker.Do.
type ActivityTrace struct {
	library string
}

var (
	traceOnce sync.Once
	trace     *ActivityTrace
	traceErr  error
)

// StartActivityTrace loads CUPTI (CUPTILibraryEnv, then the library
// search path, then the usual CUDA install folders) and starts recording,
// once per process; later calls return the same trace or error.
func StartActivityTrace() (*ActivityTrace, error) {
	traceOnce.Do(func() { trace, traceErr = startTrace() })
	return trace, traceErr
}

// CUPTILibraryEnv names a libcupti.so to load before any other, or, set to
// CUPTIOff, keeps CUPTI out: the CUDA plugins then time by events.
const (
	CUPTILibraryEnv = "FLASHCORE_CUPTI"
	CUPTIOff        = "off"
)

func startTrace() (*ActivityTrace, error) {
	if os.Getenv(CUPTILibraryEnv) == CUPTIOff {
		return nil, fmt.Errorf("CUPTI turned off (%s=%s)", CUPTILibraryEnv, CUPTIOff)
	}
	var reasons []string
	for _, path := range cuptiCandidates() {
		c := C.CString(path)
		var why [512]C.char
		ok := C.fc_cupti_open(c, &why[0], C.size_t(len(why)))
		C.free(unsafe.Pointer(c))
		if ok == 0 {
			reasons = append(reasons, C.GoString(&why[0]))
			continue
		}
		if r := C.fc_cupti_start(); r != 0 {
			return nil, fmt.Errorf("CUPTI (%s) would not start its activity records: %s", path, cuptiResult(r))
		}
		return &ActivityTrace{library: path}, nil
	}
	return nil, fmt.Errorf("no CUPTI library could be loaded (set %s to a libcupti.so): %s",
		CUPTILibraryEnv, strings.Join(reasons, "; "))
}

// cuptiCandidates are the libraries tried in order: $FLASHCORE_CUPTI, the
// names the dynamic loader finds, the CUPTI folders of $CUDA_HOME,
// $CUDA_PATH and /usr/local/cuda, then the NVIDIA wheels' (torch's) in the
// environment of $FLASHCORE_PYTHON.
func cuptiCandidates() []string {
	names := []string{"libcupti.so", "libcupti.so.13", "libcupti.so.12", "libcupti.so.11.8"}
	var out []string
	if p := os.Getenv(CUPTILibraryEnv); p != "" {
		out = append(out, p)
	}
	out = append(out, names...)
	for _, root := range []string{os.Getenv("CUDA_HOME"), os.Getenv("CUDA_PATH"), "/usr/local/cuda"} {
		if root == "" {
			continue
		}
		for _, dir := range []string{"extras/CUPTI/lib64", "targets/x86_64-linux/lib", "lib64"} {
			for _, n := range names {
				out = append(out, filepath.Join(root, dir, n))
			}
		}
	}
	if python := os.Getenv("FLASHCORE_PYTHON"); python != "" {
		env := filepath.Dir(filepath.Dir(python))
		wheels, _ := filepath.Glob(filepath.Join(env, "lib", "python3*", "site-packages", "nvidia", "*", "lib", "libcupti.so*"))
		out = append(out, wheels...)
	}
	return out
}

func cuptiResult(r C.int) string {
	if s := C.GoString(C.fc_cupti_result(r)); s != "" {
		return s
	}
	return fmt.Sprintf("CUPTI error %d", int(r))
}

// Library is the CUPTI library the trace loaded.
func (t *ActivityTrace) Library() string { return t.library }

// Mark ties the device activities of the calling thread's next launches
// and memsets to id, until Unmark.
func (t *ActivityTrace) Mark(id uint64) error {
	if r := C.fc_cupti_push(C.uint64_t(id)); r != 0 {
		return fmt.Errorf("CUPTI: mark call %d: %s", id, cuptiResult(r))
	}
	return nil
}

// Unmark ends the calling thread's innermost Mark.
func (t *ActivityTrace) Unmark() error {
	if r := C.fc_cupti_pop(); r != 0 {
		return fmt.Errorf("CUPTI: unmark: %s", cuptiResult(r))
	}
	return nil
}

// ErrActivitiesLost is wrapped by Drain when CUPTI dropped records or
// FlashCore could not keep them: the per-call sums would be short.
var ErrActivitiesLost = errors.New("CUPTI activity records were lost")

// Drain hands over the activities recorded since the last Drain, in device
// order. Synchronise with the device first: CUPTI records only what has
// finished.
func (t *ActivityTrace) Drain() ([]Activity, error) {
	if r := C.fc_cupti_flush(); r != 0 {
		return nil, fmt.Errorf("CUPTI: flush the activity buffers: %s", cuptiResult(r))
	}
	var records *C.fc_record
	var dropped, lost C.size_t
	n := int(C.fc_cupti_take(&records, &dropped, &lost))
	defer C.free(unsafe.Pointer(records))
	if dropped > 0 || lost > 0 {
		return nil, fmt.Errorf("%w: CUPTI dropped %d, FlashCore could not keep %d", ErrActivitiesLost, int(dropped), int(lost))
	}
	if n == 0 {
		return nil, nil
	}
	all := unsafe.Slice(records, n)
	marks := map[uint32]uint64{}
	for _, r := range all {
		if r.kind == C.FC_CUPTI_KIND_EXTERNAL_CORRELATION {
			marks[uint32(r.correlation)] = uint64(r.start)
		}
	}
	names := map[*C.char]string{}
	acts := make([]Activity, 0, n-len(marks))
	for _, r := range all {
		if r.kind == C.FC_CUPTI_KIND_EXTERNAL_CORRELATION {
			continue
		}
		name, ok := names[r.name]
		if !ok {
			name = C.GoString(r.name)
			names[r.name] = name
		}
		mark, marked := marks[uint32(r.correlation)]
		acts = append(acts, Activity{Name: name, StartNs: uint64(r.start), EndNs: uint64(r.end), Mark: mark, Marked: marked})
	}
	slices.SortStableFunc(acts, func(a, b Activity) int { return cmp.Compare(a.StartNs, b.StartNs) })
	return acts, nil
}
