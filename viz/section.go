package viz

import (
	"context"
	"fmt"
	"math"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/gpnb"
	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/solvers"
)

// SectionOptions tune CrossSection. The zero value is fine.
type SectionOptions struct {
	// Grid is the number of grid points per axis (0: 41).
	Grid int
	// Span is the half-width of the grid along each eigendirection (0: 1.2
	// times the largest projection of the initialisations, so every marker
	// is inside).
	Span float64
	// LanczosIterations bounds the Lanczos steps (0: 40).
	LanczosIterations int
	// Seed seeds Lanczos' start vector.
	Seed uint64
}

// Section is the 2-D cross-section of the quadratic objective
// f(u) = ½uᵀHu − uᵀb (eq. 6) through the solution v, along the unit
// eigenvectors e1, e2 of the two largest eigenvalues of H.
type Section struct {
	Lambda [2]float64 // the two largest eigenvalues λ1 ≥ λ2
	E1, E2 []float64  // their unit eigenvectors, from solvers.Lanczos
	// Alpha and Beta are the grid coordinates; F[j][i] is
	// f(v + Alpha[i]·e1 + Beta[j]·e2).
	Alpha, Beta []float64
	F           [][]float64
	// FSolution is f(v).
	FSolution float64
	// Zero and Warm are the projections (α, β) = (e1ᵀ(u0−v), e2ᵀ(u0−v)) of
	// the zero initialisation u0 = 0 and of the warm start u0 = v0.
	Zero, Warm [2]float64
}

// NewSection computes the cross-section of f through v for the operator H,
// right-hand side b, solution v and warm-start initialisation v0 (all of
// length n = op.Size()). The eigenvectors come from solvers.Lanczos; f on
// the grid is exact, from the three products H·[v e1 e2]:
//
//	f(v+αe1+βe2) = f(v) + α e1ᵀ(Hv−b) + β e2ᵀ(Hv−b) + ½α² e1ᵀHe1 + αβ e1ᵀHe2 + ½β² e2ᵀHe2.
func NewSection(op solvers.Operator, b, v, v0 []float64, o SectionOptions) (*Section, error) {
	if op == nil {
		return nil, fmt.Errorf("%w: cross-section: nil operator", ErrChart)
	}
	n := op.Size()
	for _, in := range []struct {
		name string
		x    []float64
	}{{"b", b}, {"v", v}, {"v0", v0}} {
		if len(in.x) != n {
			return nil, fmt.Errorf("%w: cross-section: %s has length %d but the operator is %d×%d: pass one column of the batch (e.g. the mean system's)", ErrChart, in.name, len(in.x), n, n)
		}
		for i, x := range in.x {
			if !finite(x) {
				return nil, fmt.Errorf("%w: cross-section: %s[%d] is %v: every entry must be finite", ErrChart, in.name, i, x)
			}
		}
	}
	if n < 2 {
		return nil, fmt.Errorf("%w: cross-section needs n ≥ 2 (two eigendirections), the operator has n = %d", ErrChart, n)
	}
	grid := o.Grid
	if grid == 0 {
		grid = 41
	}
	if grid < 2 || grid > 1000 {
		return nil, fmt.Errorf("%w: cross-section: Grid = %d: use 2..1000 points per axis (0 means 41)", ErrChart, o.Grid)
	}
	if o.Span < 0 || !finite(o.Span) {
		return nil, fmt.Errorf("%w: cross-section: Span = %v: use a finite value ≥ 0 (0 means automatic)", ErrChart, o.Span)
	}
	iters := o.LanczosIterations
	if iters == 0 {
		iters = 40
	}
	vals, vecs, err := solvers.Lanczos(op, 2, iters, o.Seed)
	if err != nil {
		return nil, fmt.Errorf("%w: cross-section: %v", ErrChart, err)
	}
	s := &Section{Lambda: [2]float64{vals[0], vals[1]}, E1: mat.Col(nil, 0, vecs), E2: mat.Col(nil, 1, vecs)}

	in := mat.NewDense(n, 3, nil)
	in.SetCol(0, v)
	in.SetCol(1, s.E1)
	in.SetCol(2, s.E2)
	out := mat.NewDense(n, 3, nil)
	op.MulTo(out, in)
	hv, he1, he2 := mat.Col(nil, 0, out), mat.Col(nil, 1, out), mat.Col(nil, 2, out)
	g := make([]float64, n) // ∇f(v) = Hv − b
	floats.SubTo(g, hv, b)
	s.FSolution = 0.5*floats.Dot(v, hv) - floats.Dot(v, b)
	g1, g2 := floats.Dot(s.E1, g), floats.Dot(s.E2, g)
	h11, h12, h22 := floats.Dot(s.E1, he1), floats.Dot(s.E1, he2), floats.Dot(s.E2, he2)
	if !finite(s.FSolution) || !finite(h11) || !finite(h12) || !finite(h22) {
		return nil, fmt.Errorf("%w: cross-section: the operator produced non-finite values: check its hyperparameters and data", ErrChart)
	}

	d := make([]float64, n)
	floats.SubTo(d, v0, v)
	s.Warm = [2]float64{floats.Dot(s.E1, d), floats.Dot(s.E2, d)}
	s.Zero = [2]float64{-floats.Dot(s.E1, v), -floats.Dot(s.E2, v)}

	span := o.Span
	if span == 0 {
		for _, x := range []float64{s.Zero[0], s.Zero[1], s.Warm[0], s.Warm[1]} {
			span = math.Max(span, math.Abs(x))
		}
		span *= 1.2
		if span == 0 {
			span = 1
		}
	}
	s.Alpha = make([]float64, grid)
	s.Beta = make([]float64, grid)
	for i := range s.Alpha {
		s.Alpha[i] = -span + 2*span*float64(i)/float64(grid-1)
		s.Beta[i] = s.Alpha[i]
	}
	s.F = make([][]float64, grid)
	for j, be := range s.Beta {
		s.F[j] = make([]float64, grid)
		for i, al := range s.Alpha {
			s.F[j][i] = s.FSolution + al*g1 + be*g2 + 0.5*al*al*h11 + al*be*h12 + 0.5*be*be*h22
		}
	}
	return s, nil
}

// Chart draws the section as a heat map of f with the solution, the zero
// initialisation and the warm start marked (figure 1, left).
func (s *Section) Chart() *Chart {
	p := &Panel{
		Title:  "Objective cross-section along e1, e2",
		XLabel: fmt.Sprintf("α along e1 (λ1 = %.4g)", s.Lambda[0]),
		YLabel: fmt.Sprintf("β along e2 (λ2 = %.4g)", s.Lambda[1]),
		Heat:   &Heat{X: s.Alpha, Y: s.Beta, Z: s.F, Label: "f(u)"},
		Width:  480, Height: 420,
		Notes: []string{"f(u) = ½uᵀHu − uᵀb, centred at the solution v"},
	}
	p.Series = []Series{
		{Name: "solution", Kind: Scatter, X: []float64{0}, Y: []float64{0}, Color: "#ffffff", Symbol: "diamond", SymbolSize: 14},
		{Name: "zero init", Kind: Scatter, X: []float64{s.Zero[0]}, Y: []float64{s.Zero[1]}, Color: ColorCold, Symbol: "circle", SymbolSize: 14},
		{Name: "warm start", Kind: Scatter, X: []float64{s.Warm[0]}, Y: []float64{s.Warm[1]}, Color: ColorWarm, Symbol: "triangle", SymbolSize: 14},
	}
	return &Chart{Title: p.Title, Panels: []*Panel{p}}
}

// CrossSection is NewSection followed by Section.Chart.
func CrossSection(op solvers.Operator, b, v, v0 []float64, o SectionOptions) (*Chart, error) {
	s, err := NewSection(op, b, v, v0, o)
	if err != nil {
		return nil, err
	}
	return s.Chart(), nil
}

// Figure1 is the paper's figure 1: the objective's cross-section (left) and
// the distances from initialisation to solution over the steps of h (right).
func Figure1(op solvers.Operator, b, v, v0 []float64, h gpnb.History, o SectionOptions) (*Chart, error) {
	cs, err := CrossSection(op, b, v, v0, o)
	if err != nil {
		return nil, err
	}
	ds, err := Distances(h)
	if err != nil {
		return nil, err
	}
	return Combine("Warm start: initialisation vs solution", cs, ds), nil
}

// Figure1Next draws figure 1 for the solve an optimiser is about to do: the
// objective f of its next step (H at the current hyperparameters, b = y,
// the mean system), the zero initialisation and the warm start the
// optimiser would use (its previous solution), next to the distances of
// its history so far. The solution v is found by conjugate gradients to a
// relative residual of 1e-10, so this costs about one cold solve. It needs
// at least one completed step.
func Figure1Next(o *gpnb.Optimiser, opt SectionOptions) (*Chart, error) {
	if o == nil {
		return nil, fmt.Errorf("%w: Figure1Next: nil optimiser", ErrChart)
	}
	st := o.State()
	if st.PrevV.Rows == 0 || len(st.History) == 0 {
		return nil, fmt.Errorf("%w: Figure1Next: the optimiser has no previous solution yet: run at least one step first", ErrChart)
	}
	ds := o.Dataset()
	op, err := kernel.NewOperator(ds.XTrain, o.Kernel(), st.Config.Operator)
	if err != nil {
		return nil, fmt.Errorf("%w: Figure1Next: %v", ErrChart, err)
	}
	n := op.Size()
	v0 := mat.Col(nil, 0, st.PrevV.Dense())
	b := mat.NewDense(n, 1, append([]float64(nil), ds.YTrain...))
	sv, err := solvers.Solve(context.Background(), op, solvers.CG{}, b, mat.NewDense(n, 1, append([]float64(nil), v0...)),
		solvers.Settings{RelTolMean: 1e-10, MaxIterations: 20 * n})
	if err != nil {
		return nil, fmt.Errorf("%w: Figure1Next: solving for v: %v", ErrChart, err)
	}
	v := mat.Col(nil, 0, sv.Solution())
	return Figure1(op, ds.YTrain, v, v0, st.History, opt)
}
