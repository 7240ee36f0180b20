package viz

import (
	"bytes"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestStaticPNGAndSVG(t *testing.T) {
	res := synthResults([]string{"pol"}, []string{"cg", "ap", "cholesky"}, 2, 6, 2)
	op, _, b, v, v0 := sectionProblem(t, 20)
	fig1, err := Figure1(op, b, v, v0, res[4].History, SectionOptions{Grid: 15})
	if err != nil {
		t.Fatal(err)
	}
	fig2, err := Runtimes(res)
	if err != nil {
		t.Fatal(err)
	}
	fig3, err := Iterations(res)
	if err != nil {
		t.Fatal(err)
	}
	fig4, err := Hyperparameters(res)
	if err != nil {
		t.Fatal(err)
	}
	resid, err := ResidualsLast(res[4].History, 2)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if keep := os.Getenv("GPNB_VIZ_KEEP"); keep != "" {
		dir = keep // keep the figures for a human look
	}
	for name, c := range map[string]*Chart{"fig1": fig1, "fig2": fig2, "fig3": fig3, "fig4": fig4, "resid": resid} {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := c.WriteImage(&buf, "png"); err != nil {
				t.Fatal(err)
			}
			img, err := png.Decode(&buf)
			if err != nil {
				t.Fatal(err)
			}
			// Size: columns × widest panel, rows × tallest, at 144 dpi
			// (96 px → 72 pt → 144 px), plus the title.
			cols := c.Columns
			if cols == 0 {
				cols = min(3, len(c.Panels))
			}
			rows := (len(c.Panels) + cols - 1) / cols
			pw, ph := 0, 0
			for _, p := range c.Panels {
				w, h := p.size()
				pw, ph = max(pw, w), max(ph, h)
			}
			wantW := float64(cols*pw) * 1.5
			if dx := float64(img.Bounds().Dx()); dx < wantW-2 || dx > wantW+2 {
				t.Errorf("PNG is %v wide, want %v", dx, wantW)
			}
			if dy := img.Bounds().Dy(); dy < int(float64(rows*ph)*1.5) {
				t.Errorf("PNG is %v high, want at least %v", dy, float64(rows*ph)*1.5)
			}
			// Every panel's cell has ink and colour (series drew).
			for i := range c.Panels {
				r, k := i/cols, i%cols
				cell := image.Rect(int(float64(k*pw)*1.5), img.Bounds().Dy()-int(float64((rows-r)*ph)*1.5),
					int(float64((k+1)*pw)*1.5), img.Bounds().Dy()-int(float64((rows-r-1)*ph)*1.5))
				ink, colour := inkIn(img, cell)
				if ink < cell.Dx()*cell.Dy()/100 || colour < 50 {
					t.Errorf("panel %d (%q): ink %d, colour %d in %v", i, c.Panels[i].Title, ink, colour, cell)
				}
			}
			svgPath := filepath.Join(dir, name+".svg")
			if err := c.Save(svgPath); err != nil {
				t.Fatal(err)
			}
			svg, err := os.ReadFile(svgPath)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(svg, []byte("<svg")) {
				t.Fatal("not an SVG")
			}
			for _, p := range c.Panels {
				// gonum/plot's SVG writes each text run as a <text> element.
				if !strings.Contains(string(svg), xmlEscape(p.Title)) {
					t.Errorf("SVG lacks panel title %q", p.Title)
				}
			}
			if err := c.Save(filepath.Join(dir, name+".png")); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func xmlEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
