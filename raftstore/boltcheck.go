package raftstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
)

// checkBoltFile reads a bbolt file's structure before bbolt maps it:
// bbolt (v1.3.6) trusts what it maps, so a truncated file crashes the
// process with SIGBUS, or a panic in a goroutine of its own that nothing
// can recover, when it walks the pages at open (issue 26 saw it). This
// walk reads the same pages with every bound checked: both meta pages,
// the file's length against the pages the newest meta says it holds, and
// every page reachable from the root (its id, type, size and elements),
// nested buckets included. It does not read values: a log entry's own
// checksum guards those (zkdb's entry encoding). A missing file is fine:
// bbolt makes a new one.
func checkBoltFile(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	c := &boltChecker{f: f, size: fi.Size(), visited: make(map[uint64]bool)}
	if err := c.check(); err != nil {
		return fmt.Errorf("raftstore: %s is damaged (%d bytes): %w; "+
			"this member cannot start from it: move its data directory aside and start it empty to resync from the others "+
			"(docs/operations.md, \"A damaged or corrupt log\")", path, fi.Size(), err)
	}
	return nil
}

// bbolt's on-disk layout (go.etcd.io/bbolt v1.3.x, little-endian).
const (
	boltMagic         = 0xED0CDAED
	boltVersion       = 2
	boltPageHeader    = 16 // id u64, flags u16, count u16, overflow u32
	boltElementSize   = 16 // branch: pos, ksize u32, pgid u64; leaf: flags, pos, ksize, vsize u32
	boltMetaChecksum  = 56 // bytes of meta the checksum covers
	boltBranchPage    = 0x01
	boltLeafPage      = 0x02
	boltMetaPage      = 0x04
	boltFreelistPage  = 0x10
	boltBucketLeaf    = 0x01
	boltNoFreelist    = ^uint64(0)
	boltMaxDepth      = 64
	boltMinPageSize   = 512
	boltMaxPageSize   = 1 << 20
	boltInlineBucket  = 16 // bucket header before an inline page: root u64, sequence u64
	boltMaxMetaSearch = 1 << 16
)

type boltMeta struct {
	pageSize        uint32
	root            uint64
	freelist, pages uint64 // pages: the high-water mark
	txid            uint64
}

type boltChecker struct {
	f        io.ReaderAt
	size     int64
	pageSize int64
	pages    uint64
	visited  map[uint64]bool
}

func (c *boltChecker) check() error {
	if c.size < 2*boltMinPageSize {
		return fmt.Errorf("shorter than its two header pages")
	}
	m0, err0 := c.readMeta(0, 0)
	ps := int64(boltMinPageSize)
	if err0 == nil {
		ps = int64(m0.pageSize)
	} else {
		// bbolt then looks for the second meta at the OS page size; so
		// do we, trying each plausible size.
		found := false
		for ps = boltMinPageSize; ps < boltMaxMetaSearch && !found; ps *= 2 {
			_, err := c.readMeta(1, ps)
			found = err == nil
		}
		if ps /= 2; !found {
			ps = int64(os.Getpagesize())
		}
	}
	m1, err1 := c.readMeta(1, ps)
	var m boltMeta
	switch {
	case err0 != nil && err1 != nil:
		return fmt.Errorf("neither header page is valid (page 0: %v; page 1: %v)", err0, err1)
	case err0 != nil:
		m = m1
	case err1 != nil:
		m = m0
	case m1.txid > m0.txid:
		m = m1
	default:
		m = m0
	}
	c.pageSize, c.pages = int64(m.pageSize), m.pages
	if need := int64(m.pages) * c.pageSize; c.size < need {
		return fmt.Errorf("truncated: its header (transaction %d) says it holds %d pages of %d bytes, %d bytes, but it ends at byte %d",
			m.txid, m.pages, m.pageSize, need, c.size)
	}
	if m.freelist != boltNoFreelist {
		if _, err := c.page(m.freelist, boltFreelistPage); err != nil {
			return fmt.Errorf("free list: %w", err)
		}
	}
	return c.walk(m.root, 0)
}

// readMeta reads and validates meta page id at page size ps (0: the
// start of the file, whatever the size).
func (c *boltChecker) readMeta(id uint64, ps int64) (boltMeta, error) {
	var b [boltPageHeader + 64]byte
	off := int64(id) * ps
	if _, err := c.f.ReadAt(b[:], off); err != nil {
		return boltMeta{}, fmt.Errorf("at offset %d: %w", off, err)
	}
	le := binary.LittleEndian
	if le.Uint16(b[8:]) != boltMetaPage {
		return boltMeta{}, fmt.Errorf("at offset %d: not a header page", off)
	}
	mb := b[boltPageHeader:]
	if le.Uint32(mb[0:]) != boltMagic || le.Uint32(mb[4:]) != boltVersion {
		return boltMeta{}, fmt.Errorf("at offset %d: not a bbolt version-2 header", off)
	}
	h := fnv.New64a()
	h.Write(mb[:boltMetaChecksum])
	if sum := le.Uint64(mb[boltMetaChecksum:]); sum != 0 && sum != h.Sum64() {
		return boltMeta{}, fmt.Errorf("at offset %d: header checksum mismatch", off)
	}
	m := boltMeta{pageSize: le.Uint32(mb[8:]), root: le.Uint64(mb[16:]), freelist: le.Uint64(mb[32:]),
		pages: le.Uint64(mb[40:]), txid: le.Uint64(mb[48:])}
	if m.pageSize < boltMinPageSize || m.pageSize > boltMaxPageSize || m.pageSize&(m.pageSize-1) != 0 {
		return boltMeta{}, fmt.Errorf("at offset %d: page size %d", off, m.pageSize)
	}
	if ps != 0 && int64(m.pageSize) != ps {
		return boltMeta{}, fmt.Errorf("at offset %d: page size %d, not %d", off, m.pageSize, ps)
	}
	return m, nil
}

// page reads page id, with its overflow, and checks its header.
func (c *boltChecker) page(id uint64, want uint16) ([]byte, error) {
	off := int64(id) * c.pageSize
	if id < 2 || id >= c.pages {
		return nil, fmt.Errorf("page %d is outside the file's %d pages", id, c.pages)
	}
	var h [boltPageHeader]byte
	if _, err := c.f.ReadAt(h[:], off); err != nil {
		return nil, fmt.Errorf("page %d at offset %d: %w", id, off, err)
	}
	le := binary.LittleEndian
	if got := le.Uint64(h[0:]); got != id {
		return nil, fmt.Errorf("page %d at offset %d says it is page %d", id, off, got)
	}
	if flags := le.Uint16(h[8:]); flags&want == 0 {
		return nil, fmt.Errorf("page %d at offset %d has type %#x, want %#x", id, off, flags, want)
	}
	overflow := uint64(le.Uint32(h[12:]))
	if id+overflow >= c.pages {
		return nil, fmt.Errorf("page %d at offset %d runs %d pages past the file's %d", id, off, overflow, c.pages)
	}
	buf := make([]byte, int64(overflow+1)*c.pageSize)
	if _, err := c.f.ReadAt(buf, off); err != nil {
		return nil, fmt.Errorf("page %d at offset %d: %w", id, off, err)
	}
	return buf, nil
}

// walk checks the tree of pages under id.
func (c *boltChecker) walk(id uint64, depth int) error {
	if depth > boltMaxDepth {
		return fmt.Errorf("page %d: the tree is deeper than %d", id, boltMaxDepth)
	}
	if c.visited[id] {
		return fmt.Errorf("page %d is reached twice", id)
	}
	c.visited[id] = true
	p, err := c.page(id, boltBranchPage|boltLeafPage)
	if err != nil {
		return err
	}
	return c.elements(p, id, int64(id)*c.pageSize, depth)
}

// elements checks a branch or leaf page's elements (p, the page and its
// overflow, is at offset off; id 0 for an inline bucket's page).
func (c *boltChecker) elements(p []byte, id uint64, off int64, depth int) error {
	le := binary.LittleEndian
	flags, count := le.Uint16(p[8:]), int(le.Uint16(p[10:]))
	if boltPageHeader+count*boltElementSize > len(p) {
		return fmt.Errorf("page %d at offset %d: %d elements do not fit", id, off, count)
	}
	for i := range count {
		at := boltPageHeader + i*boltElementSize
		e := p[at : at+boltElementSize]
		if flags&boltBranchPage != 0 {
			pos, ksize := int64(le.Uint32(e[0:])), int64(le.Uint32(e[4:]))
			if int64(at)+pos+ksize > int64(len(p)) {
				return fmt.Errorf("page %d at offset %d: element %d's key runs past the page", id, off, i)
			}
			if err := c.walk(le.Uint64(e[8:]), depth+1); err != nil {
				return err
			}
			continue
		}
		eflags, pos := le.Uint32(e[0:]), int64(le.Uint32(e[4:]))
		ksize, vsize := int64(le.Uint32(e[8:])), int64(le.Uint32(e[12:]))
		start := int64(at) + pos + ksize
		if start+vsize > int64(len(p)) {
			return fmt.Errorf("page %d at offset %d: element %d runs past the page", id, off, i)
		}
		if eflags&boltBucketLeaf == 0 {
			continue
		}
		v := p[start : start+vsize]
		if len(v) < boltInlineBucket {
			return fmt.Errorf("page %d at offset %d: element %d is a bucket too short to be one", id, off, i)
		}
		root := le.Uint64(v)
		if root != 0 {
			if err := c.walk(root, depth+1); err != nil {
				return err
			}
			continue
		}
		inline := v[boltInlineBucket:]
		if len(inline) < boltPageHeader || le.Uint16(inline[8:])&boltLeafPage == 0 {
			return fmt.Errorf("page %d at offset %d: element %d's inline bucket is not a leaf", id, off, i)
		}
		if err := c.elements(inline, 0, off+start+boltInlineBucket, depth+1); err != nil {
			return err
		}
	}
	return nil
}
