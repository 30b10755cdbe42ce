//go:build faulthook

package embedded

// TEST ONLY. Built with the faulthook tag, the store ignores ExpectHead: a
// conditional put always applies, as if two writers could both win. The
// history checker (lincheck) builds the service this way to show that it
// reports the violation; no release is built with the tag.
const skipHeadCheck = true
