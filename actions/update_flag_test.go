package actions

// Every test package imports internal/golden, so `go test ./... -update`
// defines the flag in each test binary it builds.
import _ "github.com/noderotation/node-rotation-controller/internal/golden"
