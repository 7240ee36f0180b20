package data

import "testing"

// BenchmarkLoadKeggdirected measures loading the largest UCI file (48827×21,
// gzipped): checksum, gunzip, parse, split and normalise.
func BenchmarkLoadKeggdirected(b *testing.B) {
	dir := dataDir(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Load("keggdirected", Dir(dir)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFingerprint hashes a 48827×20 dataset.
func BenchmarkFingerprint(b *testing.B) {
	ds, err := Load("keggdirected", Dir(dataDir(b)))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = ds.Fingerprint()
	}
}
