package value

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// TestStorage decodes documents one after the other through one Storage,
// recycled after each: every tree is Decode's, whatever the maps the
// earlier documents left; the Storage keeps what it may and no more.
func TestStorage(t *testing.T) {
	wide := make([]string, storageMembers+1)
	for i := range wide {
		wide[i] = fmt.Sprintf(`"k%d":{"v":%d}`, i, i)
	}
	many := strings.Repeat(`{"a":1},`, storageMaps+10)
	tests := []struct {
		name string
		doc  string
		free int // maps kept once the tree is recycled
	}{
		{"deployment", string(readDeployment(t)), 0},
		{"nested", `{"a":{"b":{"c":{}}},"d":[{"e":1},{"f":[{"g":null}]}]}`, 0},
		{"fewer members than the maps had", `{"a":{},"b":{"x":"y"}}`, 0},
		{"not an object", `[1,"two",3.0]`, 0},
		{"wide: the root not kept", "{" + strings.Join(wide, ",") + "}", storageMembers + 1},
		{"more maps than kept", "[" + many + `{"a":1}]`, storageMaps},
		{"a syntax error", `{"a":{"b":1},"c":{`, 0},
	}
	var st Storage
	kept := 0
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, wantErr := Decode([]byte(tt.doc))
			got, omitted, err := st.DecodeOmitting([]byte(tt.doc))
			if !reflect.DeepEqual(err, wantErr) || !reflect.DeepEqual(got, want) || omitted != nil {
				t.Fatalf("DecodeOmitting = %#v, %q, %v; Decode gives %#v, %v", got, omitted, err, want, wantErr)
			}
			st.Recycle()
			if tt.free != 0 {
				kept = tt.free
			}
			if n := st.Free(); n < kept || n > storageMaps {
				t.Errorf("Free() = %d after recycling, want %d to %d", n, kept, storageMaps)
			}
		})
	}
	// The wide root (more than storageMembers members) was not kept: its
	// 17 members' maps were.
	st = Storage{}
	if _, _, err := st.DecodeOmitting([]byte(tests[4].doc)); err != nil {
		t.Fatal(err)
	}
	st.Recycle()
	if n := st.Free(); n != storageMembers+1 {
		t.Errorf("Free() = %d after a wide object, want %d (its members, not it)", n, storageMembers+1)
	}
}

// TestStorageOmitting holds the Storage's DecodeOmitting to the package's.
func TestStorageOmitting(t *testing.T) {
	var st Storage
	for _, doc := range []string{
		`{"metadata":{"name":"a","managedFields":[{"manager":"m"}]},"spec":{}}`,
		`{"metadata":{"name":"b"}}`,
		`{"metadata":{"managedFields":[]}, "metadata":{"labels":{}}}`,
	} {
		want, wantOmitted, wantErr := DecodeOmitting([]byte(doc), "metadata", "managedFields")
		got, omitted, err := st.DecodeOmitting([]byte(doc), "metadata", "managedFields")
		if !reflect.DeepEqual(got, want) || string(omitted) != string(wantOmitted) || !reflect.DeepEqual(err, wantErr) {
			t.Errorf("%s: DecodeOmitting = %#v, %q, %v; want %#v, %q, %v", doc, got, omitted, err, want, wantOmitted, wantErr)
		}
		st.Recycle()
	}
}

// TestStorageForget checks that Forget leaves the trees decoded before it
// alone, and that Recycle then takes back only what was lent since.
func TestStorageForget(t *testing.T) {
	var st Storage
	first, _, err := st.DecodeOmitting([]byte(`{"a":{"b":"c"}}`))
	if err != nil {
		t.Fatal(err)
	}
	st.Forget()
	if _, _, err := st.DecodeOmitting([]byte(`{"x":{}}`)); err != nil {
		t.Fatal(err)
	}
	st.Recycle()
	if n := st.Free(); n != 2 {
		t.Errorf("Free() = %d, want 2 (the second document's maps)", n)
	}
	if _, _, err := st.DecodeOmitting([]byte(`{"y":{"z":{}}}`)); err != nil {
		t.Fatal(err)
	}
	st.Recycle()
	if want := map[string]any{"a": map[string]any{"b": "c"}}; !reflect.DeepEqual(first, want) {
		t.Errorf("a tree decoded before Forget changed: %#v, want %#v", first, want)
	}
}

// BenchmarkStorage is BenchmarkDecode's Deployment decoded through a
// Storage, recycled after each.
func BenchmarkStorage(b *testing.B) {
	data := readDeployment(b)
	var st Storage
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := st.DecodeOmitting(data); err != nil {
			b.Fatal(err)
		}
		st.Recycle()
	}
}

// TestStorageClone checks that Clone copies a map, lends the copy when it
// is small enough to be kept (a free map reused, else a new one), and
// lends nothing without a Storage or for a wide map.
func TestStorageClone(t *testing.T) {
	wide := map[string]any{}
	for i := range storageMembers + 1 {
		wide[fmt.Sprintf("k%d", i)] = i
	}
	small := map[string]any{"a": "1", "b": map[string]any{"c": 2}}
	var nilStorage *Storage
	var st Storage
	for _, tt := range []struct {
		name string
		st   *Storage
		m    map[string]any
		// shrink: members added to the copy and removed (Shrunk).
		shrink bool
		free   int // Free() after Recycle
	}{
		{"no storage", nilStorage, small, false, 0},
		{"nil map", &st, nil, false, 0},
		{"none free: a new copy, lent", &st, small, false, 1},
		{"a free map reused", &st, small, false, 1},
		{"wide: not lent", &st, wide, false, 1},
		{"grown, then shrunk: not taken back", &st, small, true, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.st.Clone(tt.m)
			if !reflect.DeepEqual(c, tt.m) {
				t.Fatalf("Clone = %#v, want %#v", c, tt.m)
			}
			if c != nil {
				c["new"] = true
				if _, ok := tt.m["new"]; ok {
					t.Fatal("the copy shares the map it was copied from")
				}
			}
			if tt.st == nil {
				return
			}
			if tt.shrink {
				// Room for many members, and the length of a small map.
				for i := range 100 {
					c[fmt.Sprint(i)] = i
				}
				for i := range 100 {
					delete(c, fmt.Sprint(i))
				}
				tt.st.Shrunk(c)
			}
			tt.st.Recycle()
			if n := tt.st.Free(); n != tt.free {
				t.Errorf("Free() = %d after recycling, want %d", n, tt.free)
			}
		})
	}
}
