package engine

// Every test binary accepts -update, so `go test ./... -update` works.
import _ "github.com/noderotation/node-rotation-controller/internal/golden"
