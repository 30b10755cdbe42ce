package saver

// Attribute keys for log/slog, shared so that every component logs the same
// names.
const (
	LogKeyComponent    = "component"
	LogKeyRequestID    = "request_id"
	LogKeyTenant       = "tenant"
	LogKeyThreadID     = "thread_id"
	LogKeyCheckpointNS = "checkpoint_ns"
	LogKeyCheckpointID = "checkpoint_id"
)
