package data

import "errors"

// Sentinel errors. Errors returned by this package wrap one of these with
// details (file, line, column, expected and actual values), so test them with
// errors.Is.
var (
	// ErrUnknownDataset: Load was given a name that is not one of Names().
	ErrUnknownDataset = errors.New("data: unknown dataset")
	// ErrSplit: a split index outside 0–9.
	ErrSplit = errors.New("data: split out of range")
	// ErrSubset: a subset size ≤ 0.
	ErrSubset = errors.New("data: invalid subset size")
	// ErrOption: an option that is invalid or does not apply to the loader.
	ErrOption = errors.New("data: invalid option")
	// ErrChecksum: a data file whose SHA-256 differs from the pinned value.
	ErrChecksum = errors.New("data: checksum mismatch")
	// ErrDownload: a missing file could not be fetched.
	ErrDownload = errors.New("data: download failed")
	// ErrNotNumber: a CSV field that is not a decimal number.
	ErrNotNumber = errors.New("data: field is not a number")
	// ErrNonFinite: a NaN or ±Inf value (or one that overflows float64).
	ErrNonFinite = errors.New("data: value is not finite")
	// ErrMissing: a missing value (an empty field, NA, NaN, ...; NaN in a
	// matrix given to New) where DropMissing is off. It comes with
	// ErrNotNumber (a field of text) or ErrNonFinite (a NaN), which the
	// same error also matches.
	ErrMissing = errors.New("data: missing value")
	// ErrRagged: a CSV row with a different number of fields than the first.
	ErrRagged = errors.New("data: rows have different numbers of fields")
	// ErrEmpty: a file (or split) without data rows.
	ErrEmpty = errors.New("data: no data rows")
	// ErrTooFew: a single training row (after DropMissing and Subset). It
	// is an error, not a Warning, because nothing at all could be learnt:
	// z-scored, the row is all zeros; the likelihood does not depend on the
	// length scales (k(x, x) = s² whatever they are) and only drives the
	// signal and noise towards 0. Two rows make a (poor) regression, which
	// the FewRows warning then flags.
	ErrTooFew = errors.New("data: fewer than two training rows")
	// ErrNoInputs: a file with only a target column (d = 0).
	ErrNoInputs = errors.New("data: no input columns")
	// ErrColumns: a column that is unknown, ambiguous or chosen twice, or a
	// second file (test, points) whose columns do not match the training
	// file's.
	ErrColumns = errors.New("data: bad columns")
	// ErrMask: a UCI test-mask file that does not fit its data file.
	ErrMask = errors.New("data: bad test mask")
	// ErrDims: a destination or argument of the wrong size.
	ErrDims = errors.New("data: dimension mismatch")
)
