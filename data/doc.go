// Package data loads regression problems for Gaussian-process training: the
// five UCI benchmark sets of the paper (pol, elevators, bike, protein,
// keggdirected) with their ten fixed train/test splits, a user's own CSV
// files (LoadCSV: a header line, a named target, chosen inputs, missing
// values), matrices computed in Go (New), and a deterministic synthetic
// generator.
//
// Every loader goes through the same checks and returns a *Dataset with a
// list of Warnings about what the data cannot support (a constant target,
// constant inputs, repeated rows, fewer rows than hyperparameters, an
// extreme target scale). Its inputs and target are, by default,
// z-scored with the training split's mean and population standard deviation
// (ddof=0); the test split uses the same statistics, which are kept in
// Dataset.Stats so predictions can be mapped back to the original scale
// (Stats.OriginalMeanTo, Stats.OriginalVarTo). Normalise(false) turns this
// off.
//
// UCI files are looked for in the Dir option's folders, else $GPNB_DATA,
// then in the user cache folder (os.UserCacheDir()/gpnb/uci). The data
// folders are only read. A file found nowhere is downloaded from the
// upstream repository treforevans/uci_datasets at a pinned commit into a
// temporary file in the user cache folder, checked against its embedded
// SHA-256 and only then renamed into place. Files already present are
// checked too; a file whose checksum does not match is never used.
//
// Errors are values wrapping the sentinel errors of this package (ErrSplit,
// ErrChecksum, ErrNonFinite, ...), so callers can test them with errors.Is;
// their text says what is wrong and what to do. No input makes a loader panic.
//
// Typical notebook lines:
//
//	ds, err := data.Load("pol", data.Split(0), data.Subset(4000))
//	ds, err := data.LoadCSV("houses.csv", data.Target("price"))
//	ds, err := data.New(x, y) // x *mat.Dense, one point a row; y []float64
package data
