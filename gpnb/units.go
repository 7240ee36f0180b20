package gpnb

import (
	"github.com/gpnb/gpnb/data"
	"github.com/gpnb/gpnb/gpnb/kernel"
)

// DataUnits returns θ = (ℓ, s, σ) of a run on z-scored data in the data's
// own units: a length scale times its input's standard deviation, the signal
// and noise scales times the target's. θ, Evaluate and the histories are on
// the z-scored scale the run trains on (data.Load, LoadCSV and Synthetic
// z-score by default); for data that are not normalised, DataUnits returns
// h unchanged.
func DataUnits(h kernel.Hyper, st data.Stats) kernel.Hyper {
	out := h.Clone()
	if !st.Normalised {
		return out
	}
	for i := range out.Lengthscales {
		if i < len(st.XStd) {
			out.Lengthscales[i] *= st.XStd[i]
		}
	}
	out.Signal *= st.YStd
	out.Noise *= st.YStd
	return out
}
