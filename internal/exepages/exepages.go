package exepages

import (
	"bytes"
	"strconv"
)

// Result is what one Release did.
type Result struct {
	// Mapped is the size in bytes of the mappings it released (whether
	// their pages were resident or not).
	Mapped uint64
	// Before and After are the process' resident file-backed pages in
	// bytes (RssFile and RssShmem; /proc/self/statm's third field) just
	// before and after.
	Before, After uint64
}

// span is one mapping of the executable that Release may give back.
type span struct{ start, end uint64 }

// file identifies the executable as /proc/self/maps writes it: the
// device's major and minor numbers and the inode.
type file struct {
	major, minor, inode uint64
}

// releasable returns, in order, the private mappings of f that cannot be
// written (read-only, executable or not) and hold no page of their own
// (smaps' Anonymous: 0 kB), from the content of /proc/PID/smaps. A mapping
// with pages of its own was written before it became read-only (a
// position-independent binary's relocated data, a debugger's breakpoint):
// unmapping those would lose the writes, so it is left, as are writable
// and shared mappings, other files' and whatever it cannot read.
func releasable(smaps []byte, f file) []span {
	var (
		out  []span
		cur  span
		open bool // cur is a candidate whose Anonymous line is still to come
	)
	for line := range bytes.Lines(smaps) {
		line = bytes.TrimSuffix(line, []byte("\n"))
		key, rest, isAttr := attribute(line)
		if !isAttr {
			cur, open = parseLine(line, f)
			continue
		}
		if open && string(key) == "Anonymous" {
			if kb, err := strconv.ParseUint(string(bytes.TrimSuffix(bytes.TrimSpace(rest), []byte(" kB"))), 10, 64); err == nil && kb == 0 {
				out = append(out, cur)
			}
			open = false
		}
	}
	return out
}

// attribute splits one of smaps' "Key: value" lines; a mapping's own line
// ("start-end perms ...") is not one.
func attribute(line []byte) (key, value []byte, ok bool) {
	first := line
	if i := bytes.IndexByte(line, ' '); i >= 0 {
		first = line[:i]
	}
	if len(first) < 2 || first[len(first)-1] != ':' {
		return nil, nil, false
	}
	return first[:len(first)-1], line[len(first):], true
}

// parseLine reads a mapping's line of /proc/PID/smaps (as in maps:
// "start-end perms offset major:minor inode path") and reports whether it is a private, read-only
// mapping of f.
func parseLine(line []byte, f file) (span, bool) {
	fields := bytes.Fields(line)
	if len(fields) < 5 {
		return span{}, false
	}
	addr, perms, dev, inode := fields[0], fields[1], fields[3], fields[4]
	if len(perms) != 4 || perms[0] != 'r' || perms[1] != '-' || perms[3] != 'p' {
		return span{}, false
	}
	lo, hi, ok := bytes.Cut(addr, []byte{'-'})
	if !ok {
		return span{}, false
	}
	major, minor, ok := bytes.Cut(dev, []byte{':'})
	if !ok {
		return span{}, false
	}
	start, err1 := strconv.ParseUint(string(lo), 16, 64)
	end, err2 := strconv.ParseUint(string(hi), 16, 64)
	maj, err3 := strconv.ParseUint(string(major), 16, 32)
	minr, err4 := strconv.ParseUint(string(minor), 16, 32)
	ino, err5 := strconv.ParseUint(string(inode), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil || err5 != nil || end <= start {
		return span{}, false
	}
	if ino == 0 || ino != f.inode || maj != f.major || minr != f.minor {
		return span{}, false
	}
	return span{start: start, end: end}, true
}

// fileResident reads the resident file-backed bytes from the content of
// /proc/PID/statm ("size resident shared text lib data dt", in pages).
func fileResident(statm []byte, pageSize int) (uint64, bool) {
	fields := bytes.Fields(statm)
	if len(fields) < 3 || pageSize <= 0 {
		return 0, false
	}
	pages, err := strconv.ParseUint(string(fields[2]), 10, 64)
	if err != nil || pages > (1<<63)/uint64(pageSize) {
		return 0, false
	}
	return pages * uint64(pageSize), true
}
