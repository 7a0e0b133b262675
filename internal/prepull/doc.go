// Package prepull chooses what the pre-pull phase pulls onto a rotation's
// surge node before the drain (docs/design.md#pre-pull): the distinct
// images of the Pods the drain moves, less those the surge node already
// has, those the policy excludes, those whose Pods need pull secrets it
// may not use, and those past maxImages — each with its fate, so `explain`
// and the completion line can name what happened to every image.
package prepull
