package runreport

import (
	"bytes"
	"context"
	"fmt"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/flashcore/bench/core/report"
	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/internal/golden"
)

// h100Run is the committed llm suite run on an H100: 26 cases in six
// facets, nine rows each.
var h100Run = filepath.Join("..", "..", "..", "docs", "results", "2026-11-22-h100-llm.json")

// svgElement matches one inline chart of the HTML report.
var svgElement = regexp.MustCompile(`(?s)<svg .*?</svg>\n`)

// TestHTMLStructure renders the fixture as HTML and compares it with the
// golden file with each inline chart cut to a placeholder (the charts'
// contents are TestChartsAreLabelledSVG's), and checks that the page asks
// for nothing over the network.
func TestHTMLStructure(t *testing.T) {
	var out bytes.Buffer
	if err := Render(&out, loadFixture(t), Options{Format: report.FormatHTML}); err != nil {
		t.Fatal(err)
	}
	page := out.String()
	if n := len(svgElement.FindAllString(page, -1)); n == 0 {
		t.Fatal("the page has no inline chart")
	}
	checkOffline(t, page)
	structure := svgElement.ReplaceAllString(page, "<svg>…</svg>\n")
	golden.Compare(t, filepath.Join("testdata", "html.golden"), []byte(structure))
}

// checkOffline fails on anything a browser would fetch: a link, a
// script or image source, a stylesheet import, a url() in CSS.
func checkOffline(t *testing.T, page string) {
	t.Helper()
	fetch := regexp.MustCompile(`(?i)<link|<script|\ssrc=|@import|url\(|https?://[^"\s]*\.(css|js|woff2?|ttf)`)
	if m := fetch.FindString(page); m != "" {
		t.Errorf("the page would fetch something: %q", m)
	}
}

// TestHTMLInChromium opens the HTML report of the H100 run in headless
// Chromium with the network off and saves a screenshot; a page that does
// not load gives no PNG. Look at the PNG (FLASHCORE_SCREENSHOT=path keeps
// it) before trusting a change to the page.
func TestHTMLInChromium(t *testing.T) {
	browser := findChromium()
	if browser == "" {
		t.Skip("no chromium on PATH (Debian: apt-get install chromium); the HTML report was not opened in a browser")
	}
	run, err := results.Load(h100Run)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	f, err := os.Create(page)
	if err != nil {
		t.Fatal(err)
	}
	if err := Render(f, run, Options{Format: report.FormatHTML}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	shot := os.Getenv("FLASHCORE_SCREENSHOT")
	if shot == "" {
		shot = filepath.Join(dir, "report.png")
	}
	if err := screenshot(browser, page, shot); err != nil {
		t.Fatal(err)
	}
	colours, inked := inkOf(t, shot)
	// A page of charts has text, grid lines and one colour per row; a
	// blank or broken page has one or two colours.
	if colours < 8 || inked < 0.02 {
		t.Errorf("the screenshot %s has %d colours and %.1f%% non-white pixels: the page did not render", shot, colours, inked*100)
	}
}

// screenshot renders page in headless Chromium to a PNG, with every host
// name unresolvable so that nothing can come from the network.
func screenshot(browser, page, png string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--host-resolver-rules=MAP * ~NOTFOUND", "--window-size=1400,2400", "--screenshot="+png, "file://"+page)
	cmd.Env = append(os.Environ(), "HOME="+filepath.Dir(png))
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("chromium: %v\n%s", err, out)
	}
	return nil
}

// inkOf counts the distinct colours of a PNG and the share of its pixels
// that are not white.
func inkOf(t *testing.T, path string) (colours int, inked float64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("the screenshot is not a PNG: %v", err)
	}
	seen := map[color.RGBA]bool{}
	b := img.Bounds()
	nonWhite := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			c := color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)
			seen[c] = true
			if c.R < 250 || c.G < 250 || c.B < 250 {
				nonWhite++
			}
		}
	}
	return len(seen), float64(nonWhite) / float64(b.Dx()*b.Dy())
}

func findChromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	return ""
}
