package dynamo

import (
	"context"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/internal/awsx"
)

// PutCheckpoint writes the checkpoint's new blobs (insert-if-absent), the
// update of its namespace's item, which guards the blobs it references (see
// nsitem.go, lifetimes.go), and the checkpoint item (upsert) with its tree
// index item (treeindex.go) in one TransactWriteItems when they fit (100
// items, 4 MB), so a checkpoint is never visible without its blobs, nor
// without its node in the tree. Larger puts send the blobs first and the
// checkpoint in the last transaction. Offloaded payloads are stored
// before any item that points at them. A put with ExpectHead reads the
// head first and updates the namespace item in every case, conditioned on
// its head token (see head.go). The request of the checkpoint item checks
// that neither its parent nor its own id has a tombstone (tombstone.go), so
// a put that brings and references no blob is one TransactWriteItems of the
// checks, the checkpoint and its index item.
func (s *Store) PutCheckpoint(ctx context.Context, in saver.PutCheckpoint) error {
	p, err := s.planPut(ctx, &in)
	if err == nil {
		err = s.send(ctx, p, "The checkpoint's blobs kept changing under the put; retry.")
	}
	if err != nil {
		return fmt.Errorf("dynamo: put checkpoint %s: %w", in.ID, err)
	}
	p.patches.remember(partitionKey(in.Tenant, in.ThreadID), in.NS, p.blobs)
	s.chains.drop(chainKey{nsKey{partitionKey(in.Tenant, in.ThreadID), in.NS}, in.ID}) // a put again may change it
	return nil
}

// putPlan is a put on its way: the blobs it brings, those it references
// (lifetimes.go), the checkpoint item, and the update of the namespace item
// by the parts the put involves, revised from what each request failed on.
type putPlan struct {
	patches patches
	blobs   []*newBlob
	refs    *lifetimesPart
	ns      nsItem
	cp      awsx.WriteOp
	node    awsx.WriteOp // the checkpoint's tree index item (treeindex.go)
	// checks are the tombstone checks (tombstone.go) of the put's parent
	// and its own id; refused the error each gives when it fails.
	checks  []awsx.WriteOp
	refused []error
	roles   []opRole // of the ops of the last request
}

// newBlob is a blob a put brings.
type newBlob struct {
	blob  saver.Blob
	op    awsx.WriteOp // its insert-if-absent
	entry blobRef      // what its lifetimes entry records
	exp   int64        // its expiry: the put's blobExp, or its base's for a patch
	patch *patchedBlob // nil for a whole value (patched.go)
	// dropped: found stored and live, the blob is one the put references.
	dropped bool
}

// opRole says which part of a put plan an op of its last request was.
type opRole struct {
	kind int // roleNS, roleRef, roleBlob, roleCheckpoint
	i    int // index in the extensions or blobs
}

const (
	roleNS = iota
	roleRef
	roleBlob
	roleCheckpoint
	roleNode
	roleCheck
)

// planPut builds the first request of a put: its new blobs, its checkpoint
// item and the parts of the namespace item's update. A put with ExpectHead
// reads the head first, and goes no further if it moved.
func (s *Store) planPut(ctx context.Context, in *saver.PutCheckpoint) (*putPlan, error) {
	now := s.Now()
	p := &putPlan{patches: patches{s}}
	exp, blobExp := in.ExpiresAt, saver.NewBlobExpiry(in.ExpiresAt, now)
	pk := partitionKey(in.Tenant, in.ThreadID)
	var guard *headGuard
	if in.ExpectHead != nil {
		g, err := s.guardHead(ctx, in, pk)
		if err != nil {
			return nil, err
		}
		guard = g
	}
	patches, err := p.patches.bring(ctx, in, pk, blobExp, now)
	if err != nil {
		return nil, err
	}
	p.blobs = patches.blobs
	p.refs = s.newLifetimesPart(in, pk, p.blobs, blobExp, now)
	known := p.patches.knownPart(in, pk, patches.mem, p.refs, p.blobs)
	cp, err := s.checkpointItem(ctx, &in.Checkpoint, exp)
	if err != nil {
		return nil, err
	}
	cp[attrBrought] = broughtAttr(in)
	p.cp = awsx.WriteOp{Item: cp, Glue: true}
	if p.node, err = nodeOp(cp, exp); err != nil {
		return nil, err
	}
	if in.ParentID != "" {
		parent := in.CheckpointRef
		parent.ID = in.ParentID
		p.checks = append(p.checks, notBuried(parent, now))
		p.refused = append(p.refused, saver.CheckpointDeleted(parent, saver.RoleParent))
	}
	p.checks = append(p.checks, notBuried(in.CheckpointRef, now))
	p.refused = append(p.refused, saver.CheckpointDeleted(in.CheckpointRef, saver.RoleCheckpoint))
	// The parts of the namespace item, in the order of their conditions.
	parts := []nsPart{p.refs}
	if known != nil {
		parts = append(parts, known)
	}
	parts = append(parts, patches)
	if guard != nil {
		parts = append(parts, guard)
	}
	p.ns = nsItem{pk: pk, ns: in.NS, exp: exp, itemExp: blobExp, parts: parts}
	return p, nil
}

// next reads the blobs no lifetimes entry vouches for and retags the
// payloads of the blobs to extend, then returns the ops of the next request.
func (p *putPlan) next(ctx context.Context) ([]awsx.WriteOp, error) {
	exts, err := p.refs.next(ctx)
	if err != nil {
		return nil, err
	}
	return p.ops(exts), nil
}

// ops returns the ops of the plan's next request, in order: the namespace
// item and extensions first, then the new blobs, the checkpoint and its
// index item last.
func (p *putPlan) ops(exts []awsx.WriteOp) []awsx.WriteOp {
	p.roles = p.roles[:0]
	var ops []awsx.WriteOp
	add := func(op awsx.WriteOp, r opRole) {
		ops = append(ops, op)
		p.roles = append(p.roles, r)
	}
	ns, checks := p.ns.op(p.cp.Item)
	add(ns, opRole{kind: roleNS})
	for i, e := range exts {
		add(e, opRole{roleRef, i})
	}
	for i, b := range p.blobs {
		if !b.dropped {
			add(b.op, opRole{roleBlob, i})
		}
	}
	add(p.cp, opRole{kind: roleCheckpoint})
	add(p.node, opRole{kind: roleNode})
	// A namespace item that checks nothing only records entries: when that
	// would take a request more (a put of 96 new blobs with a parent), the
	// entries are left out, and the first put that references those blobs
	// reads them. (Counted with the tombstone checks the request will have.)
	withNS, _ := p.checked(ops, p.roles)
	withoutNS, _ := p.checked(ops[1:], p.roles[1:])
	if !checks && len(awsx.Chunks(withNS)) > len(awsx.Chunks(withoutNS)) {
		ops, p.roles = ops[1:], p.roles[1:]
	}
	if len(ops) == 3 && !checks && len(p.blobs) == 0 && p.refs.len() == 0 {
		ops, p.roles = ops[1:], p.roles[1:] // nothing brought or referenced
	}
	ops, p.roles = p.checked(ops, p.roles)
	return ops
}

// checked returns ops, whose roles are roles and whose last two are the
// checkpoint and its index item, with the tombstone checks, and the roles
// of the ops it returns: the checks go just before the checkpoint, so
// that they are in its request (awsx.Chunks keeps checks and glued ops
// with the op after them), and first as well when the put takes several
// requests, so that a put refused sends no blob either (unless the
// tombstone comes between its requests).
func (p *putPlan) checked(ops []awsx.WriteOp, roles []opRole) ([]awsx.WriteOp, []opRole) {
	tail := len(ops) - 2 // the checkpoint's
	n := len(ops) + 2*len(p.checks)
	outOps, outRoles := make([]awsx.WriteOp, 0, n), make([]opRole, 0, n)
	addChecks := func() {
		for i, c := range p.checks {
			outOps, outRoles = append(outOps, c), append(outRoles, opRole{roleCheck, i})
		}
	}
	outOps, outRoles = append(outOps, ops[:tail]...), append(outRoles, roles[:tail]...)
	addChecks()
	outOps, outRoles = append(outOps, ops[tail:]...), append(outRoles, roles[tail:]...)
	if len(awsx.Chunks(outOps)) == 1 {
		return outOps, outRoles
	}
	front := slices.Clone(p.checks)
	frontRoles := make([]opRole, len(p.checks))
	for i := range p.checks {
		frontRoles[i] = opRole{roleCheck, i}
	}
	return append(front, outOps...), append(frontRoles, outRoles...)
}

// revise learns from the items the last request failed on: the namespace
// item (its parts revise), an extension that met another expiry, or a new
// blob found stored.
func (p *putPlan) revise(ctx context.Context, failed map[int]item) error {
	for i, old := range failed {
		r := p.roles[i]
		switch r.kind {
		case roleNS:
			if err := p.ns.refuted(ctx, old); err != nil {
				return err
			}
		case roleRef:
			if err := p.refs.failed(ctx, r.i, old); err != nil {
				return err
			}
		case roleCheck:
			return p.refused[r.i]
		case roleBlob:
			// Stored and live: insert-if-absent leaves its value, and the
			// put handles it as a blob it references.
			b := p.blobs[r.i]
			b.dropped = true
			if err := p.refs.found(ctx, b.entry, old); err != nil {
				return err
			}
		default:
			return fmt.Errorf("condition failed on the checkpoint item")
		}
	}
	return nil
}

// attrBrought is a checkpoint's record of the blobs its put brought: channel
// -> whether the value is stored (false: an empty blob, which a
// DeltaChannel's version gets at every step that is not a snapshot).
// Checkpoint items put before it existed lack it.
const attrBrought = "brought"

// broughtAttr returns the attrBrought of a put: its blobs at the versions
// the checkpoint has.
func broughtAttr(in *saver.PutCheckpoint) types.AttributeValue {
	m := make(item, len(in.Blobs))
	for _, b := range in.Blobs {
		if in.ChannelVersions[b.Channel] == b.Version {
			m[b.Channel] = &types.AttributeValueMemberBOOL{Value: b.Value.Type != saver.EmptyType}
		}
	}
	return &types.AttributeValueMemberM{Value: m}
}
