package contivconf

import (
	"os"
	"testing"
)

// BenchmarkParseSample measures a strict parse of the fully written sample.
func BenchmarkParseSample(b *testing.B) {
	data, err := os.ReadFile(samplePath)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkValidate measures validation of the per-node sample.
func BenchmarkValidate(b *testing.B) {
	c, err := Load(nodesSamplePath)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := c.Validate(); err != nil {
			b.Fatal(err)
		}
	}
}
