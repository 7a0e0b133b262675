// Package observe builds, from the informer cache, everything one reconcile
// pass knows about a NodePool: its governing policy and schedule figures,
// the census of its NodeClaims (package census), the claim its anchor names
// with the old node, placeholder, surge host and the surge claim the
// rotation induced, the placeholder's sizing — and the engine.Snapshot the
// rules decide on.
//
// There is no cluster-wide Pod cache: the placeholder is read from a cache
// scoped to the controller's namespace and the surge-for label, and the
// Pods on one node are listed directly with a spec.nodeName field selector
// only when the placeholder must be sized.
package observe
