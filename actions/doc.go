// Package actions is the fixed set of idempotent Go actions a transition of
// the rules table may name: freeze, cordon, placeholder, claim delete and
// reap, anchor write/release, conditional claim-state writes, stamps and
// announcements. Each is safe to repeat and reports what it did.
package actions
