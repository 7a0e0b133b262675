// Package inspect answers an operator's questions about live NodePools —
// what each pool is doing, what holds it, when its outstanding rotations
// will be done, why a claim is or is not rotating — by running the
// controller's own pass read-only: the same observer, census and rules
// table, with no step carried out. rotationctl's status and explain print
// what it returns; a second implementation of the decision would drift from
// the controller's, this one cannot (docs/operations.md#why-isnt-my-node-rotating).
package inspect
