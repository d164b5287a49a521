package tune

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/flashcore/bench/core/report/cell"
	"github.com/flashcore/bench/core/report/table"
)

// TopRows is how many accepted configurations a case's table lists.
const TopRows = 5

// rejectedRows is how many rejected configurations it lists, with reasons.
const rejectedRows = 3

// WriteTable prints, per case, the fastest configurations found, the
// defaults' row, and the first rejected ones with their reasons.
func WriteTable(w io.Writer, st *State, space Space, markdown bool) error {
	for i, s := range st.Searches {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if err := writeCase(w, s, space, markdown); err != nil {
			return err
		}
	}
	return nil
}

func writeCase(w io.Writer, s *Search, space Space, markdown bool) error {
	ranked := s.Ranked()
	rejected := len(s.Evaluations) - len(ranked)
	def, hasDefault := s.Default(space)
	fmt.Fprintf(w, "%s: %d evaluation(s), %d rejected, %d generation(s)\n", s.CaseID, len(s.Evaluations), rejected, s.Generation)
	if best, ok := s.Best(); ok && hasDefault && def.Accepted {
		fmt.Fprintf(w, "default %s, best %s: %.2f× the default's speed\n",
			cell.Duration(def.KernelNs), cell.Duration(best.KernelNs), def.KernelNs/best.KernelNs)
	}
	t := table.Grid{
		Header: []string{"Rank", "Config", "Kernel", "±", "vs default", "Eval", "Note"},
		Right:  []bool{true, false, true, true, true, true, false},
	}
	listed := false
	for i, e := range ranked {
		isDefault := space.IsDefault(e.Config)
		if i >= TopRows && !isDefault {
			continue
		}
		listed = listed || isDefault
		t.Rows = append(t.Rows, acceptedRow(i+1, e, def, hasDefault && def.Accepted, isDefault))
	}
	if hasDefault && !def.Accepted && !listed {
		t.Rows = append(t.Rows, rejectedRow(def, true))
	}
	shown := 0
	for _, e := range s.Evaluations {
		if e.Accepted || space.IsDefault(e.Config) || shown == rejectedRows {
			continue
		}
		t.Rows = append(t.Rows, rejectedRow(e, false))
		shown++
	}
	if len(t.Rows) == 0 {
		fmt.Fprintln(w, "no configuration evaluated")
		return nil
	}
	return table.Draw(w, t, markdown)
}

func acceptedRow(rank int, e, def Evaluation, haveDefault, isDefault bool) []string {
	vs := cell.Missing
	if haveDefault {
		vs = fmt.Sprintf("%.2f×", def.KernelNs/e.KernelNs)
	}
	note := ""
	if isDefault {
		note = "default"
	}
	halfWidth := cell.Missing
	if e.HalfWidthNs > 0 {
		halfWidth = cell.Duration(e.HalfWidthNs)
	}
	return []string{strconv.Itoa(rank), e.Config.Key(), cell.Duration(e.KernelNs), halfWidth,
		vs, strconv.Itoa(e.Index), note}
}

func rejectedRow(e Evaluation, isDefault bool) []string {
	note := "rejected (" + e.Verdict + "): " + firstLine(e.Reason)
	if isDefault {
		note = "default, " + note
	}
	return []string{cell.Missing, e.Config.Key(), cell.Missing, cell.Missing, cell.Missing, strconv.Itoa(e.Index), note}
}

// firstLine is the reason's first line, cut to 100 characters.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if r := []rune(s); len(r) > 100 {
		return string(r[:97]) + "..."
	}
	return s
}
