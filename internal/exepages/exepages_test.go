package exepages

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// sample is /proc/self/smaps of a static Go binary (device fe:00, inode
// 42), cut to the lines that matter, plus the cases Release must leave.
const sample = `00400000-03289000 r-xp 00000000 fe:00 42                               /tmp/modwright
Size:              47652 kB
Rss:               27348 kB
Anonymous:             0 kB
VmFlags: rd ex mr mw me sd
03289000-06c32000 r--p 02e89000 fe:00 42                               /tmp/modwright
Size:              59044 kB
Anonymous:             0 kB
VmFlags: rd mr mw me sd
06c32000-06c40000 r--p 06832000 fe:00 42                               /tmp/modwright
Size:                 56 kB
Anonymous:            12 kB
VmFlags: rd mr mw me sd
06c40000-06f9d000 rw-p 06840000 fe:00 42                               /tmp/modwright
Size:               3444 kB
Anonymous:           416 kB
VmFlags: rd wr mr mw me ac sd
07000000-07001000 r--s 00000000 fe:00 42                               /tmp/modwright (deleted)
Anonymous:             0 kB
07001000-07002000 r--p 00000000 fe:01 42                               /other/disk
Anonymous:             0 kB
07002000-07003000 r--p 00000000 fe:00 43                               /tmp/other
Anonymous:             0 kB
c000000000-c004000000 rw-p 00000000 00:00 0
Anonymous:         40960 kB
7f0000000000-7f0000001000 r--p 00000000 00:00 0
Anonymous:             0 kB
7f0000001000-7f0000002000 r-xp 00001000 fe:00 42                               /tmp/modwright (deleted)
Size:                  4 kB
Anonymous:             0 kB`

func TestReleasable(t *testing.T) {
	exe := file{major: 0xfe, minor: 0, inode: 42}
	tests := []struct {
		name  string
		smaps string
		exe   file
		want  []span
	}{
		{"code and read-only data; not written, writable, shared or other files' mappings", sample, exe,
			[]span{{0x400000, 0x3289000}, {0x3289000, 0x6c32000}, {0x7f0000001000, 0x7f0000002000}}},
		{"no Anonymous line: left", "00400000-03289000 r-xp 00000000 fe:00 42 /tmp/modwright\nSize: 4 kB\n", exe, nil},
		{"an unreadable Anonymous line: left", "00400000-03289000 r-xp 00000000 fe:00 42 /tmp/modwright\nAnonymous: x kB\n", exe, nil},
		{"the Anonymous line of the next mapping does not count", "00400000-00401000 r-xp 00000000 fe:00 42 /a\n00401000-00402000 rw-p 00000000 fe:00 42 /a\nAnonymous: 0 kB\n", exe, nil},
		{"end before start", "00402000-00401000 r-xp 00000000 fe:00 42 /a\nAnonymous: 0 kB\n", exe, nil},
		{"inode 0 never matches", "00400000-00401000 r--p 00000000 00:00 0\nAnonymous: 0 kB\n", file{}, nil},
		{"truncated lines", "00400000-00401000 r-xp\nAnonymous: 0 kB\n00400000\n-\n:\n", exe, nil},
		{"no final newline", "00400000-00401000 r-xp 00000000 fe:00 42 /a\nAnonymous: 0 kB", exe, []span{{0x400000, 0x401000}}},
		{"empty", "", exe, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := releasable([]byte(tt.smaps), tt.exe)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(span{})); diff != "" {
				t.Errorf("releasable (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFileResident(t *testing.T) {
	tests := []struct {
		statm string
		page  int
		want  uint64
		ok    bool
	}{
		{"26928 27852 13802 11911 0 14456 0\n", 4096, 13802 * 4096, true},
		{"1 2", 4096, 0, false},
		{"1 2 x", 4096, 0, false},
		{"1 2 3", 0, 0, false},
		{"1 2 18446744073709551615", 4096, 0, false},
	}
	for _, tt := range tests {
		got, ok := fileResident([]byte(tt.statm), tt.page)
		if got != tt.want || ok != tt.ok {
			t.Errorf("fileResident(%q, %d) = %d, %v; want %d, %v", tt.statm, tt.page, got, ok, tt.want, tt.ok)
		}
	}
}

// FuzzReleasable: whatever smaps says, the spans are well formed and in
// its order.
func FuzzReleasable(f *testing.F) {
	f.Add([]byte(sample), uint64(42))
	f.Add([]byte("00400000-00401000 r-xp 00000000 fe:00 42 /a\nAnonymous: 0 kB"), uint64(42))
	f.Fuzz(func(t *testing.T, smaps []byte, inode uint64) {
		for _, s := range releasable(smaps, file{major: 0xfe, inode: inode}) {
			if s.end <= s.start {
				t.Fatalf("span %#x-%#x", s.start, s.end)
			}
		}
	})
}
