package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestGenerated: intern_gen.go is what intern.txt generates (run go
// generate ./internal/value after changing the list).
func TestGenerated(t *testing.T) {
	in, err := os.Open("../intern.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	want, err := generate(in)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../intern_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("internal/value/intern_gen.go is stale: run go generate ./internal/value")
	}
}

// TestGenerateErrors: a word twice, a word outside a section and a missing
// section are refused.
func TestGenerateErrors(t *testing.T) {
	for _, in := range []string{
		"[keys]\na\na\n[strings]\nb\n[numbers]\n1\n",
		"a\n[keys]\nb\n",
		"[keys]\na\n[strings]\nb\n",
	} {
		if _, err := generate(strings.NewReader(in)); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}
