package table

import (
	"bytes"
	"testing"

	"github.com/noderotation/node-rotation-controller/internal/golden"
)

// TestTransitionsDocIsCurrent fails when docs/transitions.md is stale:
// run `make generate` (or `go test ./... -update`) and review the diff.
func TestTransitionsDocIsCurrent(t *testing.T) {
	e, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := e.RenderMarkdown(&b, "rules/rotation.yaml"); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "../../docs/transitions.md", b.Bytes())
}
