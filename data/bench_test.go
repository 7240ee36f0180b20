package data

import (
	"testing"

	"github.com/gpnb/gpnb/internal/ucitest"
)

// BenchmarkLoadKeggdirected measures loading the largest UCI file (48827×21,
// gzipped): checksum, gunzip, parse, split and normalise.
func BenchmarkLoadKeggdirected(b *testing.B) {
	dir := ucitest.Dir(b, "keggdirected")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Load("keggdirected", Dir(dir)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFingerprint hashes a 48827×20 dataset.
func BenchmarkFingerprint(b *testing.B) {
	ds, err := Load("keggdirected", Dir(ucitest.Dir(b, "keggdirected")))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = ds.Fingerprint()
	}
}
