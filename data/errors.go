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
	// ErrRagged: a CSV row with a different number of fields than the first.
	ErrRagged = errors.New("data: rows have different numbers of fields")
	// ErrEmpty: a file (or split) without data rows.
	ErrEmpty = errors.New("data: no data rows")
	// ErrNoInputs: a file with only a target column (d = 0).
	ErrNoInputs = errors.New("data: no input columns")
	// ErrColumns: a test file whose column count differs from the train file.
	ErrColumns = errors.New("data: train and test column counts differ")
	// ErrMask: a UCI test-mask file that does not fit its data file.
	ErrMask = errors.New("data: bad test mask")
	// ErrDims: a destination or argument of the wrong size.
	ErrDims = errors.New("data: dimension mismatch")
)
