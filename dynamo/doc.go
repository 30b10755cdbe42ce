// Package dynamo implements saver.Store, saver.TreeStore, saver.Ledger,
// saver.Expirer, saver.ItemStore and conditional puts (ExpectHead) on one
// DynamoDB table.
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
//	    c!<ns>!<checkpoint id>!w!<task id>!<idx>!        pending write (special)
//	    c!<ns>!<checkpoint id>!w!<task id>!s<seq>!       bundle of writes
//	    b!<ns>!<channel>!<version>!                      channel value (blob)
//	    x!<ns>!                                          lifetimes item
//	    n!<ns>!<checkpoint id>!                          tree index: node
//	    n!<ns>!<checkpoint id>!w!<task id>!<idx>!        tree index: an error or interrupt
//	    n!                                               tree index: marker
//	    n!#P!<page id>!                                  tree index: a page
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
// Attributes: kind ("checkpoint", "write", "blob", "lifetimes"), thread_id,
// checkpoint_ns, checkpoint_id, expires_at, and
//
//	checkpoint  parent_checkpoint_id, checkpoint (payload), metadata
//	            (msgpack, which keeps ints and floats apart),
//	            channel_versions (map), scope, run_id (for delete_for_runs),
//	            source, step, parents (copied out of the metadata for tree
//	            queries; absent when the metadata has no such value),
//	            chains (the chains of its patched values, to read them in
//	            one request), brought (channel -> BOOL: the blobs its put
//	            brought, false for an empty one, which a DeltaChannel's
//	            version gets at a step that is no snapshot; absent on
//	            items put before it existed; see put.go), known
//	            (channel -> [type, content hash, expiry] of the values its
//	            put knew, which a read takes from memory when they match;
//	            see known.go)
//	write       a put_writes' ordinary writes (idx >= 0) go in one bundle:
//	            task_id, task_path (its first write's), bundle (its number
//	            of writes) and the writes msgpacked in value; a write to a
//	            special channel (negative idx) is an item of its own with
//	            task_id, task_path, idx, channel, value (payload). Older
//	            versions stored ordinary writes so too, and bundles at
//	            b<idx>; they keep reading (bundle.go)
//	index       node: the node fields (or a flag's write, or the marker)
//	            msgpacked, read by tree queries instead of the checkpoints
//	            and writes; written with the item it stands for, same
//	            expiry (see treeindex.go). A page (page id in pid) holds
//	            the entries of up to 300 KB of packed index items with
//	            their expiries in page, and expires with the last of them;
//	            the marker lists the live pages in pages and counts their
//	            changes in pv (see treepage.go)
//	blob        channel, version, value (payload); a patch on earlier
//	            versions has chain, hash and patch (the payload) in place of
//	            value (see patched.go)
//	lifetimes   ch:<channel> = {v: version, e: expiry, r: offloaded
//	            reference, p: a patch, h: content hash} per channel of the
//	            namespace (see lifetimes.go, known.go, patched.go);
//	            head = {i: checkpoint id, n: nonce}, the token of
//	            conditional puts (see head.go); each protocol is a part
//	            of the put's update of the item (nsitem.go)
//
// A payload is a map {type, data} inline, or {type, ref} when the item
// would have been larger than Store.OffloadThreshold (350 KB by default;
// SAVER_OFFLOAD_BYTES) and an Offloader (s3offload in production) took the
// data. The offloaded object is always written before the item that points
// at it.
//
// Idempotency keys have a partition each, which no thread's can equal (see
// ledger.go):
//
//	PK  <tenant>!~ledger!<key>!      SK  l!
//
// The Store's items (LangGraph's BaseStore, itemstore.go) have partitions
// of their own too, itemShards (16) per tenant, chosen by a hash of the
// namespace's first two labels, and sort by namespace then key:
//
//	PK  <tenant>!~items!<shard>!
//	SK  i!<label 1>!...!<label n>!!<key>!
//
// No thread's partition key has three parts, and no checkpoint sort key
// starts with "i!", so neither a thread's Query nor a tenant's Scan (which
// filters on "c!") meets an item. Labels and keys are escaped, never hashed:
// the domain bounds them (saver.MaxNamespaceKeyBytes, MaxItemKeyBytes) so
// that the longest sort key is 900 bytes (TestKeyLengths). A namespace
// prefix is then a prefix of the sort key: a search under a prefix of two
// labels or more is one Query on one partition with begins_with, which
// reads nothing of other namespaces; under a shorter one, the same Query on
// each shard. Why 16 shards on two labels: one partition takes about 1,000
// write and 3,000 read units a second, and a search reads its whole prefix,
// so one partition per tenant, or per first label (LangGraph's namespaces
// mostly start with a constant such as "memories" or "users"), would put a
// tenant's every user on one partition; the second label is most often the
// user. 16 bounds what a search or listing without that label costs (16
// Queries, 8 at a time) while spreading a tenant's items over 16
// partitions. Items hold namespace, key, value (a payload, offloaded past
// OffloadThreshold under an owner named after the shard, which is no thread
// id and which OffloadRefs answers for the sweeper; untagged, since a read
// may refresh the item's TTL), vectors (float32) and dims, created_at,
// updated_at, ttl_ns, expires_ns (exact, compared by reads) and expires_at
// (rounded up, for DynamoDB TTL).
//
// # Expiry
//
// A checkpoint and its writes carry their put's ExpiresAt. The blobs a put
// brings live twice the checkpoint's remaining lifetime; a namespace's
// lifetimes item records, per channel, how long its latest blob lives, and
// each put updates it in its own transaction, conditioned on the entries of
// the blobs it references unchanged, so that a blob that would expire
// before the new checkpoint is extended by the next request (see
// lifetimes.go). A blob thus outlives every checkpoint that references it
// and is extended about once per lifetime. Every read hides expired items,
// which DynamoDB deletes only within days. SetExpiry pins or refreshes a
// checkpoint with its blobs and writes. Offloaded objects carry their
// item's expiry as tags, extended with it, and the s3offload sweeper
// deletes the objects of expired items.
//
// Puts to one namespace all update its lifetimes item, so concurrent puts
// in one namespace contend (DynamoDB cancels one of two concurrent
// transactions on an item, and the client retries it). LangGraph puts a
// namespace's checkpoints one after the other; parallel branches and
// subgraphs write to namespaces of their own.
//
// # Conditional puts
//
// A put with ExpectHead (saver.PutCheckpoint) reads the namespace's head with
// one Query and refuses a moved head there, having written nothing. Its
// transaction then sets a head token on the lifetimes item, conditioned on
// the token the read implies, so that of two writers that read the same
// head only the first to commit succeeds: DynamoDB cancels the other, which
// reads the head again and returns ECONFLICT. A token left stale by a put
// without a condition, or by a head that expired or was deleted, costs one
// Query and one transaction more, once. Puts without a condition neither
// check nor change the token, and cost what they did; one that lands
// between a conditional put's read and its transaction is not seen, so the
// writers of a thread either all send the condition or none does (see
// head.go).
//
// # Requests per operation
//
// Counted with Counter and pinned by the integration tests
// (TestRequestCounts, TestClaimRace, TestListNodesLongThread):
//
//	put_checkpoint  1 TransactWriteItems: the checkpoint with its tree
//	                index item, the tombstone checks of its parent and its
//	                id (tombstone.go), up to 95 new blobs (4 MB) and the
//	                namespace's lifetimes item; with no blob brought or
//	                referenced, the checkpoint, its index item and the
//	                checks alone (a PutItem before the index and the
//	                checks). 2 when
//	                a referenced blob must be extended (with an expiry:
//	                about once per lifetime per unchanged channel; or once
//	                when a thread's scope turns to forever); + 1
//	                BatchGetItem when no lifetimes entry vouches for a
//	                referenced blob (a fork). 1 more per 100 items beyond
//	                the first; a put of 96 new blobs with a parent (97
//	                without) leaves their entries out rather than take a
//	                second request. A value stored as
//	                a patch (patched.go) changes none of this; + 1
//	                TransactWriteItems, with the whole value, when its base
//	                is no longer the channel's version (another process put
//	                the channel since). Write units of a 2 KB checkpoint
//	                (TestMeasureWriteCosts): no blob 3 as the PutItem
//	                before the index and the checks, 10 with its index item
//	                and the check of its id (2 a small item of a
//	                transaction), 12 with its parent's check too; with a
//	                new 1 KB blob and a parent, 12 before the index and the
//	                checks, 14 with the index, 18 with the checks too
//	conditional     1 Query (the head, projected) + the put's requests,
//	put_checkpoint  with the lifetimes item always in the transaction: 1
//	                TransactWriteItems (with the namespace item, where
//	                the put alone would leave it out), 2 for 99 new blobs;
//	                so 2 requests in the common case. A moved head:
//	                the Query alone. A writer that lost a race: Query,
//	                cancelled TransactWriteItems, Query (3). A stale token:
//	                + 1 Query + 1 TransactWriteItems, once. Write units: the
//	                lifetimes item's update (2 for one under 1 KB), also
//	                when the put brings and references no blob
//	put_writes      1 TransactWriteItems of the tombstone check of the
//	                checkpoint (tombstone.go) and a bundle of the ordinary
//	                writes, whatever their number (+ 1 S3 PutObject when
//	                over the offload threshold), with the writes to special
//	                channels (negative idx) and the tree index items of the
//	                errors and interrupts among them, up to 100 items (4
//	                MB); so a put_writes is stored whole or not at all
//	                (bundle.go). Before the check a bundle alone was 1
//	                PutItem: 1 write unit for a small write, 4 with the
//	                check; a write and an error 4 before the index and the
//	                check, 8 with both (TestMeasureWriteCosts).
//	                A replayed task: 1 more per bundle the task stored
//	                before with writes this one also has (1 for a replay of
//	                the same writes)
//	get_tuple       1 Query (the checkpoint with its writes, latest or by id;
//	                a latest checkpoint with over 7 items of writes: 2, see
//	                Store.FirstPage) + 1 BatchGetItem per 100 channel values
//	                the process does not hold (known.go): none when it put
//	                or read them last, as in a session's run after run
//	list            1 Query per page in one namespace (thread and namespace
//	                given); with a thread, a limit and no namespace, 1
//	                Query of 1 item per namespace + 1 to find them, then 1
//	                per namespace (up to 32 namespaces; past that, and
//	                without a limit, the whole thread); a table Scan when no
//	                thread is given; + 1 BatchGetItem per 100 values of the
//	                listed checkpoints that the process does not hold
//	delta_history   1 Query per 1 MB page of the namespace read backwards
//	                from the target, projected (no checkpoint body or
//	                metadata), as far as the nearest seed of each channel
//	                (a chat's 100 steps between snapshots fit one page) + 1
//	                BatchGetItem of the seeds (none when the walk reaches the
//	                root) + S3 GetObject per offloaded seed or write; a
//	                parent whose id sorts above its child's (never in
//	                LangGraph) falls back to one get_tuple per ancestor
//	list_nodes      1 Query per 1 MB page of the thread's tree index,
//	                every tree route: its singles (fewer than 1,000 once
//	                packed) and pages of about 100 bytes an entry (10,000
//	                checkpoints: 1 Query of 4 items, TestListNodes-
//	                LongThread). A query that finds 1,000 singles packs
//	                them: 1 BatchWriteItem of the pages, 1 UpdateItem of
//	                the marker, 1 TransactWriteItems per 100 singles
//	                deleted (about 2 write units a checkpoint, once). The
//	                first of a thread
//	                without its marker (written before the index, or its
//	                copy cut off) reads its checkpoints and writes as well
//	                (1 Query per 1 MB page, projected) and puts the missing
//	                index items (1 TransactWriteItems per 50) and the
//	                marker (1 UpdateItem); a query that finds a checkpoint
//	                outliving the marker puts it again (about once per
//	                lifetime)
//	delete_thread   1 Query per 1 MB page + 1 BatchWriteItem per 25
//	                checkpoints (their tombstones, first) + 1 per 25 items,
//	                tree index items included; then 1 Query per 1 MB page
//	                of what raced the deletion (tombstone.go), and per pass
//	                that finds some, its tombstones and deletions (with
//	                their index items) and 1 Query more; last 1 Query of
//	                the pages a pack listed meanwhile, and their deletion
//	prune           keep_latest: the thread read whole (1 Query per 1 MB
//	                page), then BatchWriteItems of what goes: all but the
//	                latest checkpoint of each namespace and its saver.Chain
//	                (the ancestors its DeltaChannels need), with their writes
//	                and blobs (chain.go); before and after, the tree
//	                index pages: 1 GetItem of the marker, 1 BatchGetItem of
//	                its pages, the pages holding what goes rewritten and 1
//	                UpdateItem of the marker (treepage.go)
//	delete_for_runs a Scan of the tenant's checkpoints (run_id filtered),
//	                the thread read whole per thread concerned (to refuse
//	                severing a chain), then per checkpoint 1 Query + 1
//	                BatchWriteItem of its tombstone + 1 per 25 items; then
//	                per thread what raced it, as delete_thread; per thread,
//	                before and after, the tree index pages as prune
//	claim           1 UpdateItem, granted or not (a failed condition returns
//	                the record); + 1 PutItem when the key's record expired
//	                and DynamoDB has not deleted it yet
//	complete, fail  1 UpdateItem
//	set_expiry      1 Query + 1 BatchGetItem per 100 blobs (projected, no
//	                payload) + 1 TransactWriteItems of the extensions, the
//	                checkpoint and the tree index items of the checkpoint
//	                and of its errors and interrupts extended (of two items
//	                when only the checkpoint changes; an UpdateItem before
//	                the index); per offloaded payload extended, 1 S3
//	                GetObjectTagging (+ 1 PutObjectTagging)
//	offload_refs    1 Query per 1 MB page, projected (the sweeper's reads)
//	item get        1 GetItem (+ 1 S3 GetObject when offloaded); with a
//	                refresh of an item with a TTL, + 1 conditional
//	                UpdateItem
//	item puts       1 UpdateItem for a single put (if_not_exists keeps
//	                created_at; + 1 PutItem over an expired item not yet
//	                deleted), 1 DeleteItem for a delete, 1
//	                TransactWriteItems per 100 puts otherwise (+ 1 S3
//	                PutObject per offloaded value, before)
//	item search     1 Query per 1 MB page of the prefix on its shard, or on
//	                each of 16 when the prefix has under two labels; 10,000
//	                items of a 1,536-dim vector: 62 pages, about 16,000 read
//	                units (13-15 s on the local emulator, shared 2 cores)
//	list_namespaces the same, projected, + 1 Query per namespace that holds
//	                over a page of items (a seek past it)
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
// stored value) nor check the blobs a checkpoint references, and its items
// land independently, so the checkpoint must go in a second request after
// the blobs for a crash never to expose a checkpoint without its values. In
// AWS each request is a network round trip (milliseconds, where the
// loopback measure above has none), so one request beats two on latency.
// Insert-if-absent is a Put conditioned on the item being absent or
// expired (an expired item is absent to every reader); a blob or write
// stored already fails the condition and cancels the transaction, which
// goes again without it (a replay, rare). A chunk of one item goes as a
// plain PutItem or UpdateItem, at half the units. BatchWriteItem is kept
// for deletes and copies, where neither conditions nor atomicity matter.
//
// # Errors and retries
//
// The client from NewClient retries throttling, transient errors,
// transactions cancelled by contention and writes refused by a running
// transaction up to MaxAttempts times with exponential backoff and full
// jitter (see NewRetryer). Unprocessed batch items and keys are
// re-sent the same way. When retries run out the store returns
// EUNAVAILABLE (the API answers 503 with Retry-After); a failed condition is
// ECONFLICT, an item over DynamoDB's size limit ETOOLARGE, anything else
// EINTERNAL with the SDK error in the chain. These mechanics, which know
// nothing of checkpoints (expressions, transactions, batches, paging, the
// retry policy, error translation, request counting), are in
// internal/awsx, which s3offload shares.
package dynamo
