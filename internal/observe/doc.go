// Package observe builds, from the informer cache, everything one reconcile
// pass knows about a NodePool: its governing policy and schedule figures,
// the census and earliest-deadline candidate of its NodeClaims, the claim
// its anchor names with the old node, placeholder and surge host, the
// placeholder's sizing — and the engine.Snapshot the rules decide on.
//
// There is no cluster-wide Pod cache: the placeholder is read from a cache
// scoped to the controller's namespace and the surge-for label, and the
// Pods on one node are listed directly with a spec.nodeName field selector
// only when the placeholder must be sized.
package observe
