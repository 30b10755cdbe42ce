package embedded

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
)

// ErrNotStore is in the chain of the error Open returns for a file that is
// not a store it can open: empty, cut short, damaged, or another program's.
var ErrNotStore = errors.New("not a valid store")

// verifyFile walks the page tree of the bbolt file f (of size bytes) the way
// bbolt will, with every offset checked against the file, before bbolt maps
// it. bbolt trusts its file: opening one that is cut short or has a damaged
// page faults or panics inside its own goroutines (it rebuilds the freelist
// by walking every page, see NoFreelistSync in Open), which takes the process
// down with a stack dump that no recover can catch. This walk reads with
// ReadAt instead, and reports what it finds as an error wrapping ErrNotStore.
//
// It checks what bbolt relies on to walk and to write the file: a valid
// meta page (bbolt's rules for choosing one), pages within the file and
// below the high-water mark, each page's header naming itself and of the
// expected kind, each page reached once (no cycles), element offsets inside
// their page, keys not empty and in order within and across pages, a page's
// first key equal to its branch element's, branches of two children or
// more, and the freelist page, if the file has one. It does not read values: bbolt keeps no checksum of
// them, so damage inside a value is found only by the code that decodes it.
// The file must hold a saver store: its root holds buckets only, the
// checkpoints bucket among them, or nothing at all.
//
// Cost: one ReadAt per branch or leaf page and none for the pages of large
// values, about what bbolt's own freelist rebuild reads at open.
func verifyFile(f io.ReaderAt, size int64) error {
	m, err := readMeta(f, size)
	if err != nil {
		return err
	}
	if max := uint64(size) / uint64(m.pageSize); m.pgid > max {
		return notStore("the file is %d bytes, but its pages reach %d bytes: it was cut short", size, m.pgid*uint64(m.pageSize))
	}
	w := &walker{f: f, pageSize: int64(m.pageSize), hwm: m.pgid, seen: make([]uint64, (m.pgid+63)/64)}
	if m.freelist != noFreelist {
		if err := w.freelist(m.freelist); err != nil {
			return err
		}
	}
	names, err := w.walk(m.root)
	if err != nil {
		return err
	}
	if len(names) > 0 && !names[string(bucketCheckpoints)] {
		return notStore("it is a bbolt file, but not a saver store: it has no %s bucket", bucketCheckpoints)
	}
	return nil
}

func notStore(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrNotStore, fmt.Sprintf(format, args...))
}

// bbolt's file format (go.etcd.io/bbolt/internal/common), in the byte order
// of the machine that wrote it, as bbolt maps its structs onto the file.
const (
	pageHeaderSize   = 16 // id u64, flags u16, count u16, overflow u32
	elementSize      = 16 // branch: pos u32, ksize u32, pgid u64; leaf: flags u32, pos u32, ksize u32, vsize u32
	bucketHeaderSize = 16 // root pgid u64, sequence u64
	metaChecksumAt   = 56 // magic, version, pageSize, flags u32; root bucket; freelist, pgid, txid u64

	pageBranch   = 0x01
	pageLeaf     = 0x02
	pageFreelist = 0x10
	leafIsBucket = 0x01

	boltMagic   = 0xED0CDAED
	boltVersion = 2
	noFreelist  = ^uint64(0)
	// maxInlineDepth bounds buckets inlined in buckets: bbolt inlines only
	// buckets without sub-buckets, so 1 is all a sound file needs.
	maxInlineDepth = 8
)

var ne = binary.NativeEndian

type meta struct {
	pageSize                 uint32
	root, freelist, pgid, tx uint64
}

// parseMeta reads the meta in the page starting at b, or says why not.
func parseMeta(b []byte) (meta, error) {
	if len(b) < pageHeaderSize+metaChecksumAt+8 {
		return meta{}, errors.New("too short")
	}
	b = b[pageHeaderSize:]
	if ne.Uint32(b[0:]) != boltMagic {
		return meta{}, errors.New("no bbolt magic number")
	}
	if v := ne.Uint32(b[4:]); v != boltVersion {
		return meta{}, fmt.Errorf("format version %d, not %d", v, boltVersion)
	}
	h := fnv.New64a()
	h.Write(b[:metaChecksumAt])
	if ne.Uint64(b[metaChecksumAt:]) != h.Sum64() {
		return meta{}, errors.New("checksum mismatch")
	}
	return meta{
		pageSize: ne.Uint32(b[8:]),
		root:     ne.Uint64(b[16:]),
		freelist: ne.Uint64(b[32:]),
		pgid:     ne.Uint64(b[40:]),
		tx:       ne.Uint64(b[48:]),
	}, nil
}

// readMeta finds the meta page bbolt would use: the page size from the
// first meta page, or from the second one found at the page sizes bbolt
// tries, then the valid meta of the two with the larger transaction id.
func readMeta(f io.ReaderAt, size int64) (meta, error) {
	buf := make([]byte, 4096)
	read := func(off int64) (meta, error) {
		n, err := f.ReadAt(buf, off)
		if err != nil && !(errors.Is(err, io.EOF) && n > 0) {
			return meta{}, err
		}
		return parseMeta(buf[:n])
	}
	pageSize, err := metaPageSize(read, size)
	if err != nil {
		return meta{}, err
	}
	m1, err1 := read(int64(pageSize))
	m0, err0 := read(0)
	if err0 != nil && err1 != nil {
		return meta{}, notStore("both meta pages are invalid (%v; %v)", err0, err1)
	}
	m := m0
	if err0 != nil || (err1 == nil && m1.tx > m0.tx) {
		m = m1
	}
	if m.pageSize != pageSize {
		return meta{}, notStore("its meta pages disagree on the page size (%d, %d)", pageSize, m.pageSize)
	}
	if m.pgid < 4 || m.root < 2 || m.root >= m.pgid {
		return meta{}, notStore("meta page names root page %d of %d pages", m.root, m.pgid)
	}
	if m.freelist != noFreelist && (m.freelist < 2 || m.freelist >= m.pgid) {
		return meta{}, notStore("meta page names freelist page %d of %d pages", m.freelist, m.pgid)
	}
	return m, nil
}

// metaPageSize returns the page size of the first meta page, or of the
// second one found at the page sizes bbolt tries, checked against the
// file's size.
func metaPageSize(read func(int64) (meta, error), size int64) (uint32, error) {
	m0, err0 := read(0)
	pageSize := m0.pageSize
	if err0 != nil {
		for i := range 15 {
			pos := int64(1024) << i
			if pos >= size-1024 {
				break
			}
			if m, err := read(pos); err == nil {
				pageSize = m.pageSize
				break
			}
		}
	}
	if pageSize == 0 {
		return 0, notStore("no valid bbolt meta page (first page: %v)", err0)
	}
	if pageSize < 1024 || pageSize > 1<<24 || pageSize&(pageSize-1) != 0 {
		return 0, notStore("page size %d in its meta page", pageSize)
	}
	if size < 2*int64(pageSize) {
		return 0, notStore("the file is %d bytes, shorter than its two meta pages", size)
	}
	return pageSize, nil
}

// walker reads pages of one file and remembers which it has seen.
type walker struct {
	f        io.ReaderAt
	pageSize int64
	hwm      uint64   // pages in use, from the meta page
	seen     []uint64 // a bit per page below hwm
	buf      []byte   // the first bytes of the page being read
}

// page is one page read from the file: its header and its first bytes;
// bytes beyond them are read on demand. The first bytes are the walker's
// buffer, valid until the next read.
type page struct {
	id       uint64
	flags    uint16
	count    int
	overflow uint64
	size     uint64 // bytes the page spans, its overflow included
	first    []byte // the page's first pageSize bytes (or fewer at the end of the file)
	off      int64  // file offset of the page
}

// read returns the page with the given id, checking that it lies below the
// high-water mark, names itself, and was not reached before.
func (w *walker) read(id uint64, what string) (*page, error) {
	if id < 2 || id >= w.hwm {
		return nil, notStore("%s points at page %d, outside pages 2 to %d", what, id, w.hwm-1)
	}
	if w.buf == nil {
		w.buf = make([]byte, w.pageSize)
	}
	p := &page{off: int64(id) * w.pageSize, first: w.buf}
	n, err := w.f.ReadAt(p.first, p.off)
	if n < pageHeaderSize {
		return nil, notStore("page %d: cannot read its header: %v", id, err)
	}
	p.first = p.first[:n]
	p.id = ne.Uint64(p.first[0:])
	p.flags = ne.Uint16(p.first[8:])
	p.count = int(ne.Uint16(p.first[10:]))
	p.overflow = uint64(ne.Uint32(p.first[12:]))
	if p.id != id {
		return nil, notStore("page %d (%s) holds the header of page %d: the file is damaged", id, what, p.id)
	}
	if id+p.overflow >= w.hwm {
		return nil, notStore("page %d spans %d more pages, past page %d", id, p.overflow, w.hwm-1)
	}
	for i := id; i <= id+p.overflow; i++ {
		if !w.mark(i) {
			return nil, notStore("page %d is reached twice, or is both free and in use (from %s)", i, what)
		}
	}
	p.size = (p.overflow + 1) * uint64(w.pageSize)
	return p, nil
}

// mark notes page i as seen; it reports false if it was seen before.
func (w *walker) mark(i uint64) bool {
	if w.seen[i/64]&(1<<(i%64)) != 0 {
		return false
	}
	w.seen[i/64] |= 1 << (i % 64)
	return true
}

// bytes returns n bytes at offset off of the page, which must lie within it.
func (w *walker) bytes(p *page, off, n uint64) ([]byte, error) {
	if off+n > p.size || off+n < off {
		return nil, notStore("page %d: an element reaches byte %d of %d", p.id, off+n, p.size)
	}
	if off+n <= uint64(len(p.first)) {
		return p.first[off : off+n], nil
	}
	b := make([]byte, n)
	if _, err := w.f.ReadAt(b, p.off+int64(off)); err != nil {
		return nil, notStore("page %d: cannot read %d bytes at %d: %v", p.id, n, off, err)
	}
	return b, nil
}

// freelist checks the freelist page a file written with the freelist has:
// bbolt reads its ids at open.
func (w *walker) freelist(id uint64) error {
	p, err := w.read(id, "the meta page's freelist")
	if err != nil {
		return err
	}
	if p.flags != pageFreelist {
		return notStore("page %d should be the freelist, but is of kind %#x", id, p.flags)
	}
	start, count := uint64(pageHeaderSize), uint64(p.count)
	if p.count == 0xFFFF {
		b, err := w.bytes(p, start, 8)
		if err != nil {
			return err
		}
		start, count = start+8, ne.Uint64(b)
	}
	if count > p.size/8 {
		return notStore("freelist page %d claims %d ids", id, count)
	}
	ids, err := w.bytes(p, start, count*8)
	if err != nil {
		return err
	}
	for i := range count {
		free := ne.Uint64(ids[i*8:])
		if free < 2 || free >= w.hwm {
			return notStore("freelist page %d lists page %d, outside pages 2 to %d", id, free, w.hwm-1)
		}
		if !w.mark(free) {
			return notStore("freelist page %d lists page %d twice, or its own page", id, free)
		}
	}
	return nil
}

// pending is a page still to visit, with the range its keys must lie in
// (hi nil: no upper bound), the key its branch element holds (nil for a
// bucket's root page), and whether it belongs to the root bucket.
type pending struct {
	id     uint64
	lo, hi []byte
	first  []byte
	from   string
	root   bool
}

// walk visits the tree of the root bucket and of every bucket in it,
// without recursion, and returns the names of the root's buckets.
func (w *walker) walk(rootPage uint64) (map[string]bool, error) {
	names := map[string]bool{}
	stack := []pending{{id: rootPage, from: "the meta page's root", root: true}}
	for len(stack) > 0 {
		next := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		p, err := w.read(next.id, next.from)
		if err != nil {
			return nil, err
		}
		switch p.flags {
		case pageBranch:
			// bbolt merges a branch of one child away (node.rebalance), and
			// asserts that a parent has two when it rebalances a child.
			if p.count < 2 {
				return nil, notStore("branch page %d has %d children: the file is damaged", p.id, p.count)
			}
			hdr, err := w.bytes(p, pageHeaderSize, uint64(p.count)*elementSize)
			if err != nil {
				return nil, err
			}
			keys := make([][]byte, p.count)
			for i := range p.count {
				e := hdr[i*elementSize:]
				at := pageHeaderSize + uint64(i)*elementSize
				k, err := w.bytes(p, at+uint64(ne.Uint32(e[0:])), uint64(ne.Uint32(e[4:])))
				if err != nil {
					return nil, err
				}
				keys[i] = bytes.Clone(k)
			}
			if err := inOrder(p.id, keys, next); err != nil {
				return nil, err
			}
			for i := range p.count {
				hi := next.hi
				if i+1 < p.count {
					hi = keys[i+1]
				}
				child := ne.Uint64(hdr[i*elementSize+8:])
				stack = append(stack, pending{id: child, lo: keys[i], hi: hi, first: keys[i], from: fmt.Sprintf("branch page %d", p.id), root: next.root})
			}
		case pageLeaf:
			read := func(off, n uint64) ([]byte, error) { return w.bytes(p, off, n) }
			err := w.leaf(p.id, p.count, read, next, 0, func(pg uint64, from string) {
				stack = append(stack, pending{id: pg, from: from})
			}, names, next.root)
			if err != nil {
				return nil, err
			}
		default:
			return nil, notStore("page %d (%s) is of kind %#x, not a branch or leaf page", p.id, next.from, p.flags)
		}
	}
	return names, nil
}

// leaf checks the count elements of a leaf page read through read (offsets
// from the page's start), and hands each bucket's root page to push; the
// root bucket's bucket names go to names. An inline bucket's page is checked
// here, in place.
func (w *walker) leaf(id uint64, count int, read func(off, n uint64) ([]byte, error), at pending, depth int,
	push func(uint64, string), names map[string]bool, isRoot bool) error {
	hdr, err := read(pageHeaderSize, uint64(count)*elementSize)
	if err != nil {
		return err
	}
	keys := make([][]byte, count)
	for i := range count {
		e := hdr[i*elementSize:]
		flags, pos, ksize, vsize := ne.Uint32(e[0:]), uint64(ne.Uint32(e[4:])), uint64(ne.Uint32(e[8:])), uint64(ne.Uint32(e[12:]))
		base := pageHeaderSize + uint64(i)*elementSize
		k, err := read(base+pos, ksize)
		if err != nil {
			return err
		}
		keys[i] = bytes.Clone(k)
		if isRoot && flags&leafIsBucket == 0 {
			// The store keeps nothing but buckets in the root; bbolt would
			// refuse to open such a key as one ("incompatible value").
			return notStore("page %d: the root's key %q is not a bucket", id, k)
		}
		if flags&leafIsBucket == 0 {
			// The value is not read, but it must lie within the page.
			if _, err := read(base+pos+ksize, 0); err != nil {
				return err
			}
			if _, err := read(base+pos+ksize+vsize, 0); err != nil {
				return err
			}
			continue
		}
		if isRoot {
			names[string(k)] = true
		}
		v, err := read(base+pos+ksize, vsize)
		if err != nil {
			return err
		}
		if len(v) < bucketHeaderSize {
			return notStore("page %d: bucket %q has a %d-byte header", id, k, len(v))
		}
		if root := ne.Uint64(v); root != 0 {
			push(root, fmt.Sprintf("bucket %q", k))
			continue
		}
		// An inline bucket: its page follows the header in the value.
		inline := v[bucketHeaderSize:]
		if len(inline) < pageHeaderSize || depth >= maxInlineDepth {
			return notStore("page %d: inline bucket %q is damaged", id, k)
		}
		if f := ne.Uint16(inline[8:]); f != pageLeaf {
			return notStore("page %d: inline bucket %q holds a page of kind %#x", id, k, f)
		}
		readInline := func(off, n uint64) ([]byte, error) {
			if off+n > uint64(len(inline)) || off+n < off {
				return nil, notStore("page %d: inline bucket %q: an element reaches byte %d of %d", id, k, off+n, len(inline))
			}
			return inline[off : off+n], nil
		}
		err = w.leaf(id, int(ne.Uint16(inline[10:])), readInline, pending{}, depth+1, push, names, false)
		if err != nil {
			return err
		}
	}
	return inOrder(id, keys, at)
}

// inOrder checks the keys of page id, reached as at says: none empty, rising
// strictly, in [at.lo, at.hi), and, below a branch page, the first one
// equal to the branch element's key, which is how bbolt finds the page's
// element when it writes the page again (node.read, node.spill).
func inOrder(id uint64, keys [][]byte, at pending) error {
	if at.first != nil && (len(keys) == 0 || !bytes.Equal(keys[0], at.first)) {
		return notStore("page %d: its first key is not the one %s holds for it: the file is damaged", id, at.from)
	}
	for i, k := range keys {
		if len(k) == 0 {
			return notStore("page %d: key %d is empty: the file is damaged", id, i)
		}
		if (i == 0 && at.lo != nil && bytes.Compare(k, at.lo) < 0) || (i > 0 && bytes.Compare(keys[i-1], k) >= 0) ||
			(at.hi != nil && bytes.Compare(k, at.hi) >= 0) {
			return notStore("page %d: its keys are out of order: the file is damaged", id)
		}
	}
	return nil
}

// verifyPath opens the file at path and verifies it.
func verifyPath(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	return verifyFile(f, fi.Size())
}
