package saver

// LangGraph's special channels. Their writes carry a fixed negative idx and
// replace each other (upsert); error and interrupt writes mark a node as a
// failed or paused attempt.
const (
	ChannelError     = "__error__"
	ChannelScheduled = "__scheduled__"
	ChannelInterrupt = "__interrupt__"
	ChannelResume    = "__resume__"
)

// SpecialChannelIdx is LangGraph's WRITES_IDX_MAP. Validation enforces it, so
// a store can tell an error or interrupt write from its key's idx alone.
var SpecialChannelIdx = map[string]int64{
	ChannelError:     -1,
	ChannelScheduled: -2,
	ChannelInterrupt: -3,
	ChannelResume:    -4,
}
