// Package progress shows how far a long job of many tasks has come: the
// rows of `flashcore run`, and of any later command that works through a
// list (tuning, ablations). A Reporter hears when each task begins and
// ends; two are here:
//
//   - Lines writes one line per finished task and nothing else: the log
//     that a pipe, a file or CI gets;
//   - Bar draws a live bar on a terminal (task, done/total, elapsed time
//     and ETA, with github.com/schollz/progressbar) and prints each
//     finished task's line above it.
//
// For picks Bar when both stdout and stderr are terminals and Lines
// otherwise, so that anything captured reads exactly as the plain log.
package progress

import (
	"fmt"
	"io"
	"os"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Reporter follows a job of tasks.
type Reporter interface {
	// Begin says a task has started: "b1-h8-s512-d64-fp16 · cuda-v8".
	Begin(task string)
	// Done says the task ended; line is its one-line log entry.
	Done(line string)
	// Close ends the display; the Reporter is not used again.
	Close()
}

// For returns the Reporter for a job of total tasks: a Bar on stderr when
// stdout and stderr are both terminals, else Lines on stderr.
func For(stdout, stderr io.Writer, total int) Reporter {
	if isTerminal(stdout) && isTerminal(stderr) {
		return NewBar(stderr, total)
	}
	return Lines(stderr)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Lines returns a Reporter that writes each finished task's line to w.
// A nil w discards them.
func Lines(w io.Writer) Reporter {
	if w == nil {
		w = io.Discard
	}
	return lines{w}
}

type lines struct{ w io.Writer }

func (l lines) Begin(string)     {}
func (l lines) Done(line string) { fmt.Fprintln(l.w, line) }
func (l lines) Close()           {}

// Bar is a live progress bar on a terminal.
type Bar struct {
	w   io.Writer
	bar *progressbar.ProgressBar
}

// NewBar draws a bar for total tasks on w, which should be a terminal.
func NewBar(w io.Writer, total int) *Bar {
	bar := progressbar.NewOptions(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetWidth(30),
		progressbar.OptionShowCount(),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetRenderBlankState(true),
		progressbar.OptionClearOnFinish(),
	)
	return &Bar{w: w, bar: bar}
}

// Begin shows the task beside the bar.
func (b *Bar) Begin(task string) {
	b.bar.Describe(task)
	b.bar.RenderBlank()
}

// Done prints the task's line above the bar and moves the bar on.
func (b *Bar) Done(line string) {
	b.bar.Clear()
	fmt.Fprintln(b.w, line)
	b.bar.Add(1)
}

// Close takes the bar off the terminal.
func (b *Bar) Close() {
	b.bar.Finish()
	b.bar.Clear()
}
