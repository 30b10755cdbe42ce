package dynamo

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// Deltas of growing values. A channel whose value grows a little each step
// (a conversation's message list) would otherwise store the whole value
// again at every version. When the new value lines up with the previous
// one byte for byte, save for a few bytes (a msgpack array's length) and
// an appended tail, the new blob holds only those differences: a patch.
//
// A patch is uvarint(len(next)), uvarint(number of runs), then per run
// uvarint(start - end of the previous run), uvarint(length) and the run's
// bytes of next, which replace base's at the same offsets; what follows is
// next's tail past the end of base. next is base cut or extended to
// len(next), with the runs laid over it, and the tail after base.

// runGap is the number of equal bytes that may separate two differing
// ranges of one run: a run costs two varints, so bytes shorter than that
// are cheaper carried than split on.
const runGap = 8

// diff returns the patch that turns base into next, and false when the two
// do not line up well enough for it to be worth it: when the patch would be
// larger than max bytes.
func diff(base, next []byte, max int) ([]byte, bool) {
	if len(next)-len(base) > max {
		return nil, false // the tail alone is over
	}
	n := min(len(base), len(next))
	var (
		runs  []byte
		count int
		end   int // of the previous run
		size  = len(next) - n
	)
	for i := 0; i < n; {
		i += common(base[i:n], next[i:n])
		if i == n {
			break
		}
		start := i
		last := i // last differing byte of the run
		for i++; i < n && i-last <= runGap; i++ {
			if base[i] != next[i] {
				last = i
			}
		}
		stop := last + 1
		size += stop - start + 2*binary.MaxVarintLen32
		if size > max {
			return nil, false
		}
		runs = binary.AppendUvarint(runs, uint64(start-end))
		runs = binary.AppendUvarint(runs, uint64(stop-start))
		runs = append(runs, next[start:stop]...)
		count++
		end, i = stop, stop
	}
	out := make([]byte, 0, len(runs)+2*binary.MaxVarintLen64+len(next)-n)
	out = binary.AppendUvarint(out, uint64(len(next)))
	out = binary.AppendUvarint(out, uint64(count))
	out = append(out, runs...)
	out = append(out, next[n:]...)
	if len(out) > max {
		return nil, false
	}
	return out, true
}

// common returns the length of the common prefix of a and b, comparing
// blocks first: values line up over most of their length.
func common(a, b []byte) int {
	const block = 64
	i := 0
	for i+block <= len(a) && i+block <= len(b) && bytes.Equal(a[i:i+block], b[i:i+block]) {
		i += block
	}
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

var errPatch = errors.New("corrupt patch")

// patch applies a patch made by diff to base.
func patch(base, p []byte) ([]byte, error) {
	size, k := binary.Uvarint(p)
	if k <= 0 || size > uint64(len(base))+uint64(len(p)) {
		return nil, fmt.Errorf("%w: bad length", errPatch)
	}
	p = p[k:]
	count, k := binary.Uvarint(p)
	if k <= 0 {
		return nil, fmt.Errorf("%w: bad run count", errPatch)
	}
	p = p[k:]
	next := make([]byte, size)
	n := copy(next, base)
	end := 0
	for range count {
		skip, k1 := binary.Uvarint(p)
		if k1 <= 0 {
			return nil, fmt.Errorf("%w: bad run offset", errPatch)
		}
		length, k2 := binary.Uvarint(p[k1:])
		if k2 <= 0 {
			return nil, fmt.Errorf("%w: bad run length", errPatch)
		}
		p = p[k1+k2:]
		start := uint64(end) + skip
		if start > uint64(n) || length > uint64(n)-start || length > uint64(len(p)) {
			return nil, fmt.Errorf("%w: run out of range", errPatch)
		}
		copy(next[start:], p[:length])
		p = p[length:]
		end = int(start + length)
	}
	if len(p) != len(next)-n {
		return nil, fmt.Errorf("%w: tail of %d bytes for %d", errPatch, len(p), len(next)-n)
	}
	copy(next[n:], p)
	return next, nil
}
