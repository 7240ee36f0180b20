// Package viz draws the records of gpnb training runs: interactive echarts
// charts shown inline in GoNB notebooks, standalone HTML reports, and static
// PNG/SVG/PDF figures drawn with gonum/plot from the same data with the same
// titles.
//
// The paper's figures each have a builder: Figure1 (CrossSection of the
// solver's quadratic objective along the top two eigendirections of H,
// found with solvers.Lanczos, beside Distances from initialisation to
// solution), Runtimes (figure 2), Iterations (figure 3) and Hyperparameters
// (figure 4); Residuals and ResidualTrace draw solver residual trajectories;
// Table holds the paper's Tables 1 and 2 (ResultsTable, SpeedupTable).
// The figures of results chart one run as well (a checkpoint's
// OptimiserState.Result()); ResidualsLast and Distances chart a History.
// Predictive draws a one-dimensional prediction: data, mean, a filled band
// (series kind Band) and posterior samples, from plain slices, which
// PredictionOf fills from a gpnb.Prediction.
// Every builder returns a *Chart, a plain value of panels and series that
// can be inspected or changed before it is rendered:
//
//	c, err := viz.Iterations(results)
//	c.Show()                    // inline in a GoNB cell
//	err = c.Save("fig3.html")   // standalone page; .png, .svg, .pdf: static
//
// A Report collects charts and tables into one self-contained page (what
// `gpnb report` writes). Live shows a training run's progress in place.
//
// In a GoNB notebook every output is flushed (gonbui.Sync) before Show or a
// Live update returns, so none is lost when the cell's program exits. The
// echarts library travels with the first chart of a kernel session only;
// the other charts use the page's copy, waiting for it if a saved notebook
// renders them first (see ResendEcharts).
//
// Pages work offline: the echarts library is inlined from a local copy of
// the npm package (see Echarts for where it is looked for); only when none
// can be had does a page load it from the public CDN, and it then says so in
// an HTML comment. Animations are off so renders are deterministic.
package viz
