// Package fakekarpenter plays Karpenter's part against a real API server,
// deterministically and only when a test asks: it creates NodeClaims with
// their Nodes and marks them Ready, binds and runs the placeholder on a
// node it provisions (or on an existing one, the "absorbed" path), and
// finalizes deleted claims. Nothing happens behind the test's back.
package fakekarpenter
