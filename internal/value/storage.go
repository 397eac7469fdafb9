package value

import (
	"maps"
	"unsafe"
)

// Storage lends the objects (maps) of the trees decoded through it and
// takes them back once their caller is done with those trees, so that a
// server decoding one request after another reuses the same maps: a Go
// map costs about 340 bytes however few its members, and a Deployment
// holds some 35, most of one or two members.
//
// Recycle takes back every map lent since the last Recycle or Forget,
// cleared: the caller must then hold no reference into a tree decoded
// since, nor anything it handed such a tree to (a goroutine still reading
// it, a queue). When that cannot be promised, Forget leaves the maps to
// their trees (and the garbage collector).
//
// A Storage keeps at most storageMaps maps, none of more than
// storageMembers members (clearing a map keeps its capacity): one large
// tree does not stay in it. The zero value is ready to use; a Storage is
// not safe for concurrent use.
type Storage struct {
	lent []map[string]any // since the last Recycle or Forget
	free []map[string]any
	// shrunk holds the identity of the maps members were removed from
	// since the last Recycle or Forget (Shrunk); nil until one is.
	shrunk map[unsafe.Pointer]struct{}
}

// storageMaps is the most maps a Storage keeps, and records as lent
// (more are made as Decode makes them, and left to their trees).
const storageMaps = 256

// storageMembers is the most members a map Recycle keeps may have held.
const storageMembers = 16

// newMap is a map for a decoder: a free one, or a new one; recorded as
// lent while there is room.
func (s *Storage) newMap() map[string]any {
	var m map[string]any
	if n := len(s.free); n > 0 {
		m = s.free[n-1]
		s.free[n-1] = nil
		s.free = s.free[:n-1]
	} else {
		m = make(map[string]any)
	}
	if len(s.lent) < storageMaps {
		s.lent = append(s.lent, m)
	}
	return m
}

// Recycle takes back the maps lent since the last Recycle or Forget (see
// Storage): each is cleared and kept for the next decoding, but for those
// that held more than a few members or find the Storage full, which are
// left to their trees.
func (s *Storage) Recycle() {
	for i, m := range s.lent {
		if len(m) <= storageMembers && len(s.free) < storageMaps && !s.isShrunk(m) {
			clear(m)
			s.free = append(s.free, m)
		}
		s.lent[i] = nil
	}
	s.lent = s.lent[:0]
	clear(s.shrunk)
}

// Shrunk tells s that members were removed from m, a map it may have
// lent (patch.Doc's copies are changed, the decoded maps are not):
// Recycle leaves m to its tree, since clearing a map keeps its capacity
// and m's length no longer tells how many members it held. A nil Storage
// does nothing.
func (s *Storage) Shrunk(m map[string]any) {
	if s == nil {
		return
	}
	if s.shrunk == nil {
		s.shrunk = make(map[unsafe.Pointer]struct{})
	}
	s.shrunk[mapIdentity(m)] = struct{}{}
}

func (s *Storage) isShrunk(m map[string]any) bool {
	if len(s.shrunk) == 0 {
		return false
	}
	_, ok := s.shrunk[mapIdentity(m)]
	return ok
}

// mapIdentity is the map m points to (a map value is a pointer).
func mapIdentity(m map[string]any) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&m)) }

// Forget drops the record of the maps lent since the last Recycle or
// Forget: they stay their trees'.
func (s *Storage) Forget() {
	clear(s.lent)
	s.lent = s.lent[:0]
	clear(s.shrunk)
}

// Free reports how many maps the Storage keeps for the next decoding.
func (s *Storage) Free() int { return len(s.free) }

// DecodeOmitting is the package's DecodeOmitting, its objects lent by s;
// a nil Storage lends none (the package's DecodeOmitting itself).
func (s *Storage) DecodeOmitting(data []byte, path ...string) (v any, omitted []byte, err error) {
	return decodeOmitting(s, data, path)
}

// Clone returns a shallow copy of m lent by s, as Decode's maps are, so
// that a caller changing a decoded tree copy-on-write (patch.Doc) reuses
// the copies too: a free map (or a new one) with m's members put in it. A
// nil Storage lends none (maps.Clone), nor does one for a map it would not
// take back. A caller removing members from the copy tells s (Shrunk).
func (s *Storage) Clone(m map[string]any) map[string]any {
	if s == nil || m == nil || len(m) > storageMembers {
		return maps.Clone(m)
	}
	c := s.newMap()
	maps.Copy(c, m)
	return c
}
