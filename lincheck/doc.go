// Package lincheck is test support: it checks the service's promises
// against recorded histories, Jepsen's way. Concurrent clients drive a saver
// process over HTTP while the tests inject faults (kill -9 of the service or
// of replicas, DynamoDB stopped or frozen, S3 cut off); every operation's
// call and return go into a History, an operation whose outcome the client
// could not learn with an infinite return (it may or may not have taken
// effect), and porcupine checks the history for linearizability against a
// sequential model of each promise:
//
//   - HeadModel: a thread's head under conditional puts (expected_head) is a
//     register with compare-and-set;
//   - LedgerModel: an idempotency key has exactly one winner, and a
//     completed result never changes;
//   - ItemModel: a Store item is a register that a delete empties.
//
// The tests build the service from this module; the one that shows the
// checker can fail builds it with the faulthook tag, which makes the
// embedded store skip the head's condition (embedded/faulthook_on.go).
package lincheck
