package dynamo

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/saver-dev/saver/internal/awsx"
)

// Pages of the tree index: a tree query of a long thread spends its time
// reading and decoding one small item per checkpoint (10,000 items, about
// 160 ms on the local emulator, most of it in the SDK), so a query that
// finds TreePackAt single index items or more packs them into a few large
// immutable page items, about 100 bytes an entry:
//
//	SK  n!#P!<page id>!   page (kind "index"; "#" is escaped in a namespace)
//
// The thread's marker lists its live pages (attribute pages) and counts
// every change of that list and every deletion (attribute pv). A reader
// reads the marker, the singles and the pages in the one Query it did
// before (a listed page it does not find held only expired entries), and
// takes an entry from a single when there is one, live or not: a single is
// either one not packed yet, one whose deletion after packing has not come
// yet (the same entry), or one put again since (SetExpiry), which is newer.
//
// A change of the list writes its new pages first, then the marker in one
// conditional update (pv as read, so of racing packers and deletions one
// wins and the others read again), then deletes the pages it replaced, and
// for a pack the singles it packed, each on the condition that it is still
// the single it packed: a crash leaves unlisted pages (ignored; they
// expire with their entries) or singles also packed (the reader takes the
// single), never an entry missing. Deletions of checkpoints (DeleteForRuns,
// Prune) drop their entries from the pages that hold them, changing the
// list before they delete anything and again after, so that a pack that
// read a single they delete cannot list it: its marker update fails.
// DeleteThread deletes the marker with the rest, and the pages a pack
// listed meanwhile after. Puts never touch pages: they write a single, as
// before.
const (
	attrPage    = "page"  // a page's entries, msgpacked
	attrPageID  = "pid"   // a page's id
	attrPages   = "pages" // the marker's: ids of the live pages
	attrPageVer = "pv"    // the marker's: changes of pages and deletions

	// DefaultTreePackAt is the number of single index items at which a
	// tree query packs them into pages.
	DefaultTreePackAt = 1000
	// maxPageBytes bounds a page's entries, under DynamoDB's 400 KB item.
	maxPageBytes = 300 << 10
)

// pageEntry is an entry of a page with its expiry. It is msgpacked as an
// array of its fields, written and read field by field: a page of 10,000
// entries decodes in a third of the time reflection takes over named
// fields.
type pageEntry struct {
	E   indexEntry
	Exp int64
}

// pageEntryFields is the length of a pageEntry's array.
const pageEntryFields = 9

// EncodeMsgpack writes e as [ns, id, parent, source, step, task, idx,
// expiry, parents].
func (e *pageEntry) EncodeMsgpack(enc *msgpack.Encoder) error {
	err := enc.EncodeArrayLen(pageEntryFields)
	for _, v := range []string{e.E.NS, e.E.ID, e.E.Parent, e.E.Source} {
		if err == nil {
			err = enc.EncodeString(v)
		}
	}
	for _, v := range []int64{e.E.Step} {
		if err == nil {
			err = enc.EncodeInt(v)
		}
	}
	if err == nil {
		err = enc.EncodeString(e.E.Task)
	}
	for _, v := range []int64{e.E.Idx, e.Exp} {
		if err == nil {
			err = enc.EncodeInt(v)
		}
	}
	if err == nil {
		err = enc.EncodeMapLen(len(e.E.Parents))
	}
	for k, v := range e.E.Parents {
		if err == nil {
			err = enc.EncodeString(k)
		}
		if err == nil {
			err = enc.EncodeString(v)
		}
	}
	return err
}

// DecodeMsgpack reads what EncodeMsgpack writes.
func (e *pageEntry) DecodeMsgpack(dec *msgpack.Decoder) error {
	n, err := dec.DecodeArrayLen()
	if err != nil {
		return err
	}
	if n != pageEntryFields {
		return fmt.Errorf("page entry of %d fields, want %d", n, pageEntryFields)
	}
	str := func(v *string) {
		if err == nil {
			*v, err = dec.DecodeString()
		}
	}
	num := func(v *int64) {
		if err == nil {
			*v, err = dec.DecodeInt64()
		}
	}
	str(&e.E.NS)
	str(&e.E.ID)
	str(&e.E.Parent)
	str(&e.E.Source)
	num(&e.E.Step)
	str(&e.E.Task)
	num(&e.E.Idx)
	num(&e.Exp)
	if err != nil {
		return err
	}
	n, err = dec.DecodeMapLen()
	if err != nil || n <= 0 {
		return err
	}
	e.E.Parents = make(map[string]string, n)
	for range n {
		var k, v string
		str(&k)
		str(&v)
		e.E.Parents[k] = v
	}
	return err
}

// entryKey names an index entry as its sort key does, without building it.
type entryKey struct {
	ns, id, task string
	idx          int64
}

func keyOfEntry(e *indexEntry) entryKey { return entryKey{e.NS, e.ID, e.Task, e.Idx} }

// pageKey returns the sort key of page id.
func pageKey(id string) string { return key(kindIndex, "#P", id) }

// pagePrefix starts the sort key of every page.
var pagePrefix = key(kindIndex, "#P")

// newPageID returns a page id no other page has.
func newPageID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// single is a single index item as a reader found it.
type single struct {
	e    *indexEntry
	exp  int64
	node []byte // the item's node attribute as read, the packer's condition
}

// treeState is what a tree query read of a thread's index.
type treeState struct {
	entries []*indexEntry // live, singles first
	exps    []int64
	marker  *int64 // the marker's expiry; nil without a live marker
	ver     int64
	pages   []string // the marker's page ids
	singles []single // live ones
	// shadows are the singles, live or not: each stands for its entry in
	// place of a page's.
	shadows map[entryKey]bool
	// found are the listed pages found, by id.
	found map[string][]pageEntry
}

// pagesOf returns the page ids of the marker item it.
func pagesOf(it item) []string { return getStrings(it, attrPages) }

// decodePage returns the entries of a page item.
func decodePage(it item) ([]pageEntry, error) {
	b, _ := it[attrPage].(*types.AttributeValueMemberB)
	if b == nil {
		return nil, fmt.Errorf("page item without %s", attrPage)
	}
	dec := msgpack.NewDecoder(bytes.NewReader(b.Value))
	n, err := dec.DecodeArrayLen()
	if err != nil {
		return nil, fmt.Errorf("decode index page: %w", err)
	}
	es := make([]pageEntry, max(n, 0))
	for i := range es {
		if err := es[i].DecodeMsgpack(dec); err != nil {
			return nil, fmt.Errorf("decode index page: %w", err)
		}
	}
	return es, nil
}

// merge makes st.entries from its singles and pages: a single stands for
// its entry whether live or not (st.shadows), a page's entry counts only if
// live. The listed pages hold no entry twice: a pack takes out of them
// what it adds (pack).
func (s *Store) merge(st *treeState) {
	n := len(st.singles)
	for _, es := range st.found {
		n += len(es)
	}
	st.entries, st.exps = make([]*indexEntry, 0, n), make([]int64, 0, n)
	for _, sg := range st.singles {
		st.entries, st.exps = append(st.entries, sg.e), append(st.exps, sg.exp)
	}
	for _, id := range st.pages {
		for i := range st.found[id] {
			pe := &st.found[id][i]
			if len(st.shadows) > 0 && st.shadows[keyOfEntry(&pe.E)] || s.expired(pe.Exp) {
				continue
			}
			st.entries, st.exps = append(st.entries, &pe.E), append(st.exps, pe.Exp)
		}
	}
}

// pageItems returns page items holding entries, none over maxPageBytes,
// with their ids.
func pageItems(pk string, entries []pageEntry) ([]item, []string, error) {
	var (
		items []item
		ids   []string
		start int
		size  int
	)
	flush := func(end int) error {
		if end == start {
			return nil
		}
		b, err := msgpack.Marshal(entries[start:end])
		if err != nil {
			return fmt.Errorf("encode index page: %w", err)
		}
		id := newPageID()
		it := item{attrPK: attrS(pk), attrSK: attrS(pageKey(id)), attrKind: attrS(itemIndex),
			attrPageID: attrS(id), attrPage: &types.AttributeValueMemberB{Value: b}}
		if exp := pageExpiry(entries[start:end]); exp != 0 {
			it[attrExpiresAt] = attrN(exp)
		}
		items, ids = append(items, it), append(ids, id)
		start, size = end, 0
		return nil
	}
	for i := range entries {
		n := entrySize(&entries[i])
		if size+n > maxPageBytes {
			if err := flush(i); err != nil {
				return nil, nil, err
			}
		}
		size += n
	}
	if err := flush(len(entries)); err != nil {
		return nil, nil, err
	}
	return items, ids, nil
}

// entrySize bounds an entry's msgpacked size.
func entrySize(e *pageEntry) int {
	n := 48 + len(e.E.NS) + len(e.E.ID) + len(e.E.Parent) + len(e.E.Source) + len(e.E.Task)
	for k, v := range e.E.Parents {
		n += 4 + len(k) + len(v)
	}
	return n
}

// pageExpiry is when every entry of a page has expired: never when one
// never does.
func pageExpiry(es []pageEntry) int64 {
	var last int64
	for _, e := range es {
		if e.Exp == 0 {
			return 0
		}
		last = max(last, e.Exp)
	}
	return last
}

// errPagesRaced reports a marker changed since it was read.
var errPagesRaced = errors.New("the tree index pages changed meanwhile")

// repage replaces the pages among st.pages that hold an entry drop
// reports with pages of their other entries and of add, in
// one conditional update of the marker at st.ver: errPagesRaced when it
// changed. It returns the new list. The new pages are written first and
// the replaced ones deleted after; pages left over by a failure are
// deleted too.
func (s *Store) repage(ctx context.Context, pk string, st *treeState, drop func(e *indexEntry) bool, add []pageEntry) ([]string, error) {
	var (
		keep     []string
		replaced []string
		pool     []pageEntry
	)
	for _, id := range st.pages {
		es, ok := st.found[id]
		if !ok {
			continue // expired and gone
		}
		if !slices.ContainsFunc(es, func(e pageEntry) bool { return drop(&e.E) }) {
			keep = append(keep, id)
			continue
		}
		replaced = append(replaced, id)
		for _, e := range es {
			if !drop(&e.E) && !s.expired(e.Exp) {
				pool = append(pool, e)
			}
		}
	}
	pool = append(pool, add...)
	items, ids, err := pageItems(pk, pool)
	if err != nil {
		return nil, err
	}
	if err := s.putItems(ctx, items); err != nil {
		return nil, err
	}
	list := append(keep, ids...)
	if err := s.setPages(ctx, pk, st.ver, list); err != nil {
		if errors.Is(err, errPagesRaced) {
			err = errors.Join(err, s.deletePages(ctx, pk, ids))
		}
		return nil, err
	}
	st.ver++
	return list, s.deletePages(ctx, pk, replaced)
}

// putItems puts items with BatchWriteItem.
func (s *Store) putItems(ctx context.Context, items []item) error {
	if len(items) == 0 {
		return nil
	}
	reqs := make([]types.WriteRequest, len(items))
	for i, it := range items {
		reqs[i] = types.WriteRequest{PutRequest: &types.PutRequest{Item: it}}
	}
	return s.table.BatchWrite(ctx, reqs)
}

// deletePages deletes the pages ids of partition pk.
func (s *Store) deletePages(ctx context.Context, pk string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	reqs := make([]types.WriteRequest, len(ids))
	for i, id := range ids {
		reqs[i] = types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: item{attrPK: attrS(pk), attrSK: attrS(pageKey(id))}}}
	}
	return s.table.BatchWrite(ctx, reqs)
}

// setPages sets the marker's page list to ids and counts a change, if the
// marker exists and its count is still ver: errPagesRaced otherwise.
func (s *Store) setPages(ctx context.Context, pk string, ver int64, ids []string) error {
	u := awsx.NewExpr("u")
	if len(ids) == 0 {
		u.Text = fmt.Sprintf("SET %s = %s REMOVE %s", u.Name(attrPageVer), u.Value(attrN(ver+1)), u.Name(attrPages))
	} else {
		u.Text = fmt.Sprintf("SET %s = %s, %s = %s", u.Name(attrPageVer), u.Value(attrN(ver+1)), u.Name(attrPages), u.Value(stringList(ids)))
	}
	c := awsx.NewExpr("c")
	if ver == 0 {
		c.Text = fmt.Sprintf("attribute_exists(%s) AND attribute_not_exists(%s)", c.Name(attrPK), c.Name(attrPageVer))
	} else {
		c.Text = fmt.Sprintf("%s = %s", c.Name(attrPageVer), c.Value(attrN(ver)))
	}
	err := s.table.Transact(ctx, []awsx.WriteOp{{Item: item{attrPK: attrS(pk), attrSK: attrS(indexMarkerKey)}, Set: u, Cond: c}})
	var cf *awsx.CondFailed
	if errors.As(err, &cf) {
		return errPagesRaced
	}
	return err
}

// pack packs the live singles of st into pages (the pages holding an
// entry of a single, live or expired, are rewritten without it: an expiry
// set shorter after a pack leaves no page entry behind once DynamoDB
// deletes the expired single), then deletes each single that is still as
// packed. A race with another pack or a deletion leaves things as they
// were.
func (s *Store) pack(ctx context.Context, pk string, st *treeState) error {
	add := make([]pageEntry, len(st.singles))
	for i, sg := range st.singles {
		add[i] = pageEntry{E: *sg.e, Exp: sg.exp}
	}
	if _, err := s.repage(ctx, pk, st, func(e *indexEntry) bool { return st.shadows[keyOfEntry(e)] }, add); err != nil {
		if errors.Is(err, errPagesRaced) {
			return nil
		}
		return err
	}
	ops := make([]awsx.WriteOp, len(st.singles))
	for i, sg := range st.singles {
		c := awsx.NewExpr("c")
		c.Text = fmt.Sprintf("%s = %s", c.Name(attrNode), c.Value(&types.AttributeValueMemberB{Value: sg.node}))
		if sg.exp == 0 {
			c.Text += fmt.Sprintf(" AND attribute_not_exists(%s)", c.Name(attrExpiresAt))
		} else {
			c.Text += fmt.Sprintf(" AND %s = %s", c.Name(attrExpiresAt), c.Value(attrN(sg.exp)))
		}
		ops[i] = awsx.WriteOp{Item: item{attrPK: attrS(pk), attrSK: attrS(sg.e.sk())}, Delete: true, Cond: c}
	}
	return s.sendEach(ctx, ops)
}

// sendEach sends conditional writes a transaction of up to 100 at a time,
// leaving out those whose condition failed and sending the others again.
func (s *Store) sendEach(ctx context.Context, ops []awsx.WriteOp) error {
	for len(ops) > 0 {
		n := min(len(ops), awsx.MaxTransactItems)
		err := s.table.Transact(ctx, ops[:n])
		var cf *awsx.CondFailed
		if errors.As(err, &cf) {
			rest := make([]awsx.WriteOp, 0, len(ops))
			for i := range n {
				if _, failed := cf.Items[i]; !failed {
					rest = append(rest, ops[i])
				}
			}
			ops = append(rest, ops[n:]...)
			continue
		}
		if err != nil {
			return err
		}
		ops = ops[n:]
	}
	return nil
}

// pagesState reads a thread's marker and its listed pages (a GetItem and
// a BatchGetItem per 100 pages): nil when it has no marker.
func (s *Store) pagesState(ctx context.Context, pk string) (*treeState, error) {
	m, err := s.table.Get(ctx, item{attrPK: attrS(pk), attrSK: attrS(indexMarkerKey)})
	if err != nil || m == nil {
		return nil, err
	}
	st := &treeState{ver: getN(m, attrPageVer), pages: pagesOf(m), found: map[string][]pageEntry{}}
	if len(st.pages) == 0 {
		return st, nil
	}
	keys := make([]item, len(st.pages))
	for i, id := range st.pages {
		keys[i] = item{attrPK: attrS(pk), attrSK: attrS(pageKey(id))}
	}
	found, err := s.table.BatchGet(ctx, keys)
	if err != nil {
		return nil, err
	}
	for _, it := range found {
		es, err := decodePage(it)
		if err != nil {
			return nil, err
		}
		st.found[getS(it, attrPageID)] = es
	}
	return st, nil
}

// dropFromPages takes the entries drop reports out of the thread's pages
// and counts the change on its marker even when no page held one, so that
// a pack that read a single before the change cannot list it. It returns
// the pages listed after; none when the thread has no marker.
func (s *Store) dropFromPages(ctx context.Context, pk string, drop func(e *indexEntry) bool) ([]string, error) {
	for try := 0; ; try++ {
		if try == maxPageTries {
			return nil, fmt.Errorf("%w for %d tries", errPagesRaced, try)
		}
		st, err := s.pagesState(ctx, pk)
		if err != nil || st == nil {
			return nil, err
		}
		list, err := s.repage(ctx, pk, st, drop, nil)
		if errors.Is(err, errPagesRaced) {
			continue
		}
		return list, err
	}
}

// maxPageTries bounds a deletion's tries at changing pages that packs and
// other deletions keep changing.
const maxPageTries = 20

// deleteAllPages deletes every page of the partition pk, listed or not:
// one Query of their keys.
func (s *Store) deleteAllPages(ctx context.Context, pk string) error {
	items, err := s.prefixItems(ctx, pk, pagePrefix, attrPageID)
	if err != nil {
		return err
	}
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = getS(it, attrPageID)
	}
	return s.deletePages(ctx, pk, ids)
}

// prefixItems reads the items of partition pk whose sort key starts with
// prefix, projected on attrs and their keys.
func (s *Store) prefixItems(ctx context.Context, pk, prefix string, attrs ...string) ([]item, error) {
	in := &dynamodb.QueryInput{
		KeyConditionExpression:    ptr("PK = :pk AND begins_with(SK, :p)"),
		ExpressionAttributeValues: item{":pk": attrS(pk), ":p": attrS(prefix)},
	}
	project(&in.ProjectionExpression, &in.ExpressionAttributeNames, append([]string{attrPK, attrSK}, attrs...))
	var out []item
	err := s.table.Query(ctx, in, func(items []item) bool {
		out = append(out, items...)
		return true
	})
	return out, err
}
