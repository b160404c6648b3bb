package seglog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/hashicorp/raft"
)

// Stable is a raft.StableStore (the current term and the vote) in one
// small file, rewritten whole and renamed into place on every change:
// Raft changes it at elections only.
//
//	"HUTCHSTB" | uvarint count | count × (uvarint key length | key | uvarint value length | value) | u32 CRC-32C of all before it
type Stable struct {
	path string
	mu   sync.Mutex // guards kv and failed, and serialises writes
	kv   map[string][]byte
	// failed is the first write error: after it nothing is accepted, as
	// the file may hold either version.
	failed error
}

const (
	stableMagic = "HUTCHSTB"
	stableFile  = "stable"
)

// errNotFound is what Raft expects for a key never set: it compares the
// message, "not found".
var errNotFound = errors.New("not found")

// OpenStable opens (or creates) the stable store in dir.
func OpenStable(dir string) (*Stable, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	s := &Stable{path: filepath.Join(dir, stableFile), kv: map[string][]byte{}}
	// A write cut off before its rename left only the temporary file.
	if err := os.Remove(s.path + ".tmp"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	b, err := os.ReadFile(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, err
	}
	if err := s.decode(b); err != nil {
		return nil, fmt.Errorf("%w: %s: %v; the member's term and vote are lost: move its data directory away and let it rejoin from the others", ErrCorrupt, s.path, err)
	}
	return s, nil
}

func (s *Stable) decode(b []byte) error {
	if len(b) < len(stableMagic)+4 || string(b[:len(stableMagic)]) != stableMagic {
		return errors.New("not a stable store file")
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return errors.New("fails its checksum")
	}
	rest := body[len(stableMagic):]
	field := func() ([]byte, bool) {
		n, k := binary.Uvarint(rest)
		if k <= 0 || n > uint64(len(rest)-k) {
			return nil, false
		}
		f := rest[k : k+int(n)]
		rest = rest[k+int(n):]
		return f, true
	}
	count, k := binary.Uvarint(rest)
	if k <= 0 {
		return errors.New("bad count")
	}
	rest = rest[k:]
	for range count {
		key, ok1 := field()
		val, ok2 := field()
		if !ok1 || !ok2 {
			return errors.New("truncated entry")
		}
		s.kv[string(key)] = slices.Clone(val)
	}
	if len(rest) != 0 {
		return errors.New("trailing bytes")
	}
	return nil
}

// Set stores a value durably.
func (s *Stable) Set(key, val []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed != nil {
		return fmt.Errorf("seglog: refusing to write the stable store after an earlier failure: %w", s.failed)
	}
	next := maps.Clone(s.kv)
	next[string(key)] = slices.Clone(val)
	if err := s.write(next); err != nil {
		s.failed = err
		return err
	}
	s.kv = next
	return nil
}

func (s *Stable) write(kv map[string][]byte) error {
	b := []byte(stableMagic)
	b = binary.AppendUvarint(b, uint64(len(kv)))
	for _, k := range slices.Sorted(maps.Keys(kv)) {
		b = binary.AppendUvarint(b, uint64(len(k)))
		b = append(b, k...)
		b = binary.AppendUvarint(b, uint64(len(kv[k])))
		b = append(b, kv[k]...)
	}
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	return WriteFileAtomic(s.path, b)
}

// Get returns a value, or an error saying "not found".
func (s *Stable) Get(key []byte) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.kv[string(key)]
	if !ok {
		return nil, errNotFound
	}
	return slices.Clone(v), nil
}

// SetUint64 stores a number durably.
func (s *Stable) SetUint64(key []byte, val uint64) error {
	return s.Set(key, binary.BigEndian.AppendUint64(nil, val))
}

// GetUint64 returns a number, or 0 and an error saying "not found".
func (s *Stable) GetUint64(key []byte) (uint64, error) {
	v, err := s.Get(key)
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("seglog: %s holds %d bytes for %q, not a number", s.path, len(v), key)
	}
	return binary.BigEndian.Uint64(v), nil
}

var _ raft.StableStore = (*Stable)(nil)
