// Package dynamo implements saver.Store on one DynamoDB table.
//
// # Item layout
//
// The table has a string partition key PK and a string sort key SK, on-demand
// billing, no index, and TTL on expires_at (epoch seconds, absent when the
// item never expires). Every item of a thread shares one partition, so the
// reads a graph makes are single Queries:
//
//	PK  <tenant>!<thread>!
//
//	SK  c!<ns>!<checkpoint id>!                          checkpoint
//	    c!<ns>!<checkpoint id>!w!<task id>!<idx>!        pending write
//	    b!<ns>!<channel>!<version>!                      channel value (blob)
//
// Each part is escaped so that it never holds the separator "!": bytes up
// to "#" become "#" and two hex digits. The escape keeps byte order, and "!"
// sorts below every escaped byte, so a namespace's checkpoints sort by id as
// LangGraph compares ids, and a checkpoint's writes sort right after it and
// before the next id. Namespaces, channel names, versions, task ids and
// tenants longer than their budget are replaced by "#Z" and their SHA-256
// (which no escaped string starts with), so every key fits DynamoDB's limits
// (1,024 bytes of sort key) whatever the input; checkpoint ids are never
// hashed, as their order matters. See key.go.
//
// Attributes: kind ("checkpoint", "write", "blob"), thread_id,
// checkpoint_ns, checkpoint_id, expires_at (the checkpoint's or the
// writes' ExpiresAt; a put's new blobs take the checkpoint's), and
//
//	checkpoint  parent_checkpoint_id, checkpoint (payload), metadata
//	            (msgpack, which keeps ints and floats apart),
//	            channel_versions (map), scope, run_id (for delete_for_runs)
//	write       task_id, task_path, idx, channel, value (payload)
//	blob        channel, version, value (payload)
//
// A payload is a map {type, data} inline, or {type, ref} when an Offloader
// (s3offload in production) took the data because the item would have been
// larger than its threshold (350 KB by default). The offloaded object is
// always written before the item that points at it.
//
// # Requests per operation
//
// Counted with Counter and pinned by the integration tests:
//
//	put_checkpoint  1 TransactWriteItems (checkpoint + up to 99 new blobs, 4 MB);
//	                1 PutItem when there is no new blob
//	put_writes      1 TransactWriteItems for up to 100 writes; 1 UpdateItem
//	                or PutItem for a single write
//	get_tuple       1 Query (the checkpoint with its writes, latest or by id)
//	                + 1 BatchGetItem per 100 channel values
//	list            1 Query per page in one namespace (thread and namespace
//	                given); the whole thread when no namespace is given; a
//	                table Scan when no thread is given; + 1 BatchGetItem per
//	                100 values of the listed checkpoints
//	delete_thread   1 Query per 1 MB page + 1 BatchWriteItem per 25 items
//
// Reads are strongly consistent: a put acknowledged by one service process
// is visible to the next read on any other.
//
// # Transactions rather than BatchWriteItem
//
// Puts use TransactWriteItems. Measured on the local stack (dynoxide; put of
// a checkpoint of 2 KB with 10 blobs of 1 KB, 40 runs, see
// TestMeasureWritePaths):
//
//	TransactWriteItems             1 request   24 write units   median 1.8 ms
//	BatchWriteItem, then PutItem   2 requests  12 write units   median 1.6 ms
//
// Transactions cost twice the write units, but they are the only way to
// meet the contract in one request: BatchWriteItem takes neither conditions
// nor updates, so it cannot insert a blob only if absent (it would replace a
// stored value), and its items land independently, so the checkpoint must
// go in a second request after the blobs for a crash never to expose a
// checkpoint without its values. In AWS each request is a network round
// trip (milliseconds, where the loopback measure above has none), so one
// request beats two on latency. Insert-if-absent is an Update setting each
// attribute with if_not_exists, which never fails, so a replayed blob or
// write cannot cancel the transaction it shares. A chunk of one item goes
// as a plain PutItem or UpdateItem, at half the units. BatchWriteItem is
// kept for deletes and copies, where neither conditions nor atomicity
// matter.
//
// # Errors and retries
//
// The client from NewClient retries throttling, transient errors and
// transactions cancelled by contention up to MaxAttempts times with
// exponential backoff and full jitter. Unprocessed batch items and keys are
// re-sent the same way. When retries run out the store returns
// EUNAVAILABLE (the API answers 503 with Retry-After); a failed condition is
// ECONFLICT, an item over DynamoDB's size limit ETOOLARGE, anything else
// EINTERNAL with the SDK error in the chain.
package dynamo
