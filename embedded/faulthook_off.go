//go:build !faulthook

package embedded

// skipHeadCheck is false in every build but the checker's broken one (the
// faulthook tag, see faulthook_on.go): the compiler drops the branch it
// guards.
const skipHeadCheck = false
