package embedded

import (
	"bytes"
	"context"
	"crypto/rand"
	"time"

	"github.com/saver-dev/saver"
)

var _ saver.Ledger = (*Store)(nil)

// sweepPerGrant is how many expired ledger records a granted claim deletes.
// A grant adds at most one record, so the ledger never holds more than a few
// expired records per live one, without a background sweeper.
const sweepPerGrant = 8

func ledgerKey(tenant, k string) []byte { return key(tenant, k) }

// expiryKey is a record's entry in the expiry index: its expiry as 8 bytes
// in numeric order, then its ledger key.
func expiryKey(at int64, lk []byte) []byte {
	return append([]byte(idxComponent(at)), lk...)
}

// Claim grants the lease on a key that is new, expired, free after a
// retryable failure or whose lease ran out, and otherwise reports its state.
//
// A read answers most claims that grant nothing, without a write or an
// fsync. A grant decides again inside one write transaction, which bbolt
// serialises with every other: of concurrent claims exactly one sees the key
// free.
func (s *Store) Claim(ctx context.Context, in saver.ClaimRequest) (*saver.Claim, error) {
	lk := ledgerKey(in.Tenant, in.Key)
	var (
		claim *saver.Claim
		grant *ledgerRecord
	)
	err := s.view(ctx, "claim", func(tx kvTx) error {
		rec, err := getLedger(tx, lk)
		if err != nil {
			return err
		}
		claim, grant = decideClaim(rec, in, s.Now(), "")
		return nil
	})
	if err != nil {
		return nil, err
	}
	if grant == nil { // nothing to store: a state, or a resend's grant
		return claim, nil
	}
	// The token is drawn once: the group commit may run the function again
	// after a rollback (commit.go), and each run decides afresh; only the committed run's
	// answer leaves, so a token never reaches a caller without its record.
	token := rand.Text()
	err = s.update(ctx, "claim", func(tx kvTx) error {
		now := s.Now()
		rec, err := getLedger(tx, lk)
		if err != nil {
			return err
		}
		var next *ledgerRecord
		claim, next = decideClaim(rec, in, now, token)
		if next == nil {
			return nil
		}
		if err := putLedger(tx, lk, rec, next); err != nil {
			return err
		}
		return sweepLedger(tx, now.UnixNano(), sweepPerGrant)
	})
	if err != nil {
		return nil, err
	}
	return claim, nil
}

// decideClaim answers a claim at now on the key's record (nil if none), and
// returns the record to store when the claim is granted to token.
func decideClaim(rec *ledgerRecord, in saver.ClaimRequest, now time.Time, token string) (*saver.Claim, *ledgerRecord) {
	t := now.UnixNano()
	if rec != nil && rec.ExpiresAt <= t {
		rec = nil
	}
	if rec != nil {
		if c := rec.claimRecord().Answer(in.Key, in.ClaimID, now); c != nil {
			return c, nil
		}
	}
	next := &ledgerRecord{
		State:          saver.ClaimClaimed,
		Token:          token,
		ClaimID:        in.ClaimID,
		Attempt:        1,
		LeaseExpiresAt: now.Add(in.Lease).UnixNano(),
		ExpiresAt:      now.Add(in.TTL).UnixNano(),
		TTL:            in.TTL,
	}
	if rec != nil {
		next.Attempt = rec.Attempt + 1
		next.Error = rec.Error
	}
	return &saver.Claim{
		Key:            in.Key,
		State:          saver.ClaimClaimed,
		Token:          token,
		LeaseExpiresAt: unixTime(next.LeaseExpiresAt),
		Attempt:        next.Attempt,
		Error:          next.Error,
	}, next
}

// Complete stores the result of the claim that token holds.
func (s *Store) Complete(ctx context.Context, tenant, key, token string, result saver.Typed) error {
	return s.settle(ctx, "complete", tenant, key, token, ledgerRecord{State: saver.ClaimCompleted, Result: &result})
}

// Fail stores the failure of the claim that token holds.
func (s *Store) Fail(ctx context.Context, tenant, key, token string, failure saver.ClaimError) error {
	return s.settle(ctx, "fail", tenant, key, token, ledgerRecord{State: saver.ClaimFailed, Error: &failure})
}

// settle stores an outcome (State with its Result or Error) for the holder
// of token. The holder keeps the key after its lease ran out until someone
// else claims it. Repeating the stored outcome is accepted, so a client can
// retry a call whose answer it lost.
func (s *Store) settle(ctx context.Context, op, tenant, key, token string, out ledgerRecord) error {
	lk := ledgerKey(tenant, key)
	// outcome is the caller's answer. Returning it from the function
	// instead would roll back, and rerun, every call batched with it.
	var outcome error
	err := s.update(ctx, op, func(tx kvTx) error {
		outcome = nil
		now := s.Now()
		rec, err := getLedger(tx, lk)
		if err != nil {
			return err
		}
		switch {
		case rec == nil || rec.ExpiresAt <= now.UnixNano():
			outcome = saver.ErrClaimUnknown(key)
		case rec.Token != token:
			outcome = saver.ErrClaimNotHeld(key)
		case rec.State == saver.ClaimClaimed:
			next := *rec
			next.State, next.Result, next.Error = out.State, out.Result, out.Error
			next.LeaseExpiresAt = 0
			next.ExpiresAt = now.Add(rec.TTL).UnixNano()
			return putLedger(tx, lk, rec, &next)
		case !out.outcome().Same(rec.outcome()):
			outcome = saver.ErrClaimSettled(key, rec.State)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return outcome
}

// outcome is the record's state with its result or error.
func (r *ledgerRecord) outcome() saver.Outcome {
	return saver.Outcome{State: r.State, Result: r.Result, Error: r.Error}
}

// claimRecord is the record as the root's claim rules read it.
func (r *ledgerRecord) claimRecord() *saver.ClaimRecord {
	return &saver.ClaimRecord{State: r.State, Token: r.Token, ClaimID: r.ClaimID, Attempt: r.Attempt, LeaseExpiresAt: unixTime(r.LeaseExpiresAt), Outcome: r.outcome()}
}

// getLedger returns the record of a ledger key, expired or not; nil if none.
func getLedger(tx kvTx, lk []byte) (*ledgerRecord, error) {
	v := tx.Bucket(bucketLedger).Get(lk)
	if v == nil {
		return nil, nil
	}
	return decodeLedger(v)
}

// putLedger stores rec under lk in place of old (nil if none), and moves
// its entry in the expiry index.
func putLedger(tx kvTx, lk []byte, old, rec *ledgerRecord) error {
	v, err := encodeLedger(rec)
	if err != nil {
		return err
	}
	eb := tx.Bucket(bucketLedgerExpiry)
	if old != nil {
		if err := eb.Delete(expiryKey(old.ExpiresAt, lk)); err != nil {
			return err
		}
	}
	if err := tx.Bucket(bucketLedger).Put(lk, v); err != nil {
		return err
	}
	return eb.Put(expiryKey(rec.ExpiresAt, lk), []byte{})
}

// sweepLedger deletes up to max records expired at now, the oldest first.
func sweepLedger(tx kvTx, now int64, max int) error {
	eb := tx.Bucket(bucketLedgerExpiry)
	var doomed [][]byte
	c := eb.Cursor()
	for k, _ := c.First(); k != nil && len(doomed) < max; k, _ = c.Next() {
		at, err := parseIdx(string(k[:min(len(k), idxBytes)]))
		if err != nil {
			return err
		}
		if at > now {
			break
		}
		doomed = append(doomed, bytes.Clone(k))
	}
	lb := tx.Bucket(bucketLedger)
	for _, k := range doomed {
		if err := lb.Delete(k[idxBytes:]); err != nil {
			return err
		}
		if err := eb.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

func unixTime(ns int64) time.Time { return time.Unix(0, ns).UTC() }
