package s3offload

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"strings"
	"time"
)

// Object keys are
//
//	<prefix><tenant>/<thread>/<period>/<sha256 of the data>
//
// tenant and thread are base64url (no padding; "_" for the empty string,
// which no base64 text equals), so any id fits in a key, the key names its
// thread for DeleteThread and the sweeper, and one thread's objects share a
// prefix that a listing selects.
//
// period is the start, in epoch seconds, of the hour the object was written
// in. Within it keys are content-addressed, so a retried put writes the same
// object again. Across hours the same data gets a new key: a writer only ever
// writes or references objects of the current period, and the sweeper only
// touches periods that closed more than its grace ago, so the sweeper can
// never delete an object that a put in flight is about to point at.
const period = time.Hour

// seg encodes an id as a key segment.
func seg(s string) string {
	if s == "" {
		return "_"
	}
	return base64.RawURLEncoding.EncodeToString([]byte(s))
}

// unseg decodes a key segment.
func unseg(s string) (string, bool) {
	if s == "_" {
		return "", true
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	return string(b), err == nil && s != ""
}

// threadPrefix is the key prefix of every object of a thread.
func (s *Store) threadPrefix(tenant, threadID string) string {
	return s.Prefix + seg(tenant) + "/" + seg(threadID) + "/"
}

// objectKey is the key of data written at now for a thread.
func (s *Store) objectKey(tenant, threadID, sum string, now time.Time) string {
	start := now.Truncate(period).Unix()
	return s.threadPrefix(tenant, threadID) + strconv.FormatInt(start, 10) + "/" + sum
}

// digest returns the hex SHA-256 of data, the last segment of its key.
func digest(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// objectName is a key taken apart.
type objectName struct {
	tenant, threadID string
	period           time.Time
	sum              string
}

// parseKey takes apart a key under the store's prefix; ok is false for a key
// this package did not make.
func (s *Store) parseKey(key string) (objectName, bool) {
	rest, ok := strings.CutPrefix(key, s.Prefix)
	if !ok {
		return objectName{}, false
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 4 || len(parts[3]) != sha256.Size*2 {
		return objectName{}, false
	}
	tenant, ok1 := unseg(parts[0])
	thread, ok2 := unseg(parts[1])
	start, err := strconv.ParseInt(parts[2], 10, 64)
	if !ok1 || !ok2 || err != nil {
		return objectName{}, false
	}
	if _, err := hex.DecodeString(parts[3]); err != nil {
		return objectName{}, false
	}
	return objectName{tenant: tenant, threadID: thread, period: time.Unix(start, 0), sum: parts[3]}, true
}
