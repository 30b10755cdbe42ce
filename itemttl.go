package saver

import "time"

// Item TTLs follow PostgresStore: a put with a TTL expires that long after
// the put; a read asking to refresh (get and search, per op) restarts the
// TTL of what it returns; a put without a TTL never expires. Expired items
// are never returned, whether or not a sweep has removed them yet.

// ItemExpiry is when an item put or refreshed at now with ttl expires; the
// zero time (never) for no TTL.
func ItemExpiry(now time.Time, ttl time.Duration) time.Time {
	if ttl <= 0 {
		return time.Time{}
	}
	return now.Add(ttl)
}

// ItemExpired reports whether an item expiring at expiresAt (zero: never)
// has expired at now: an item that expires at T is gone at T.
func ItemExpired(expiresAt, now time.Time) bool {
	return !expiresAt.IsZero() && !now.Before(expiresAt)
}
