// A module of its own: the image builder of `make image` (README.md here).
// It keeps go-containerregistry out of the controller's module graph.
module github.com/noderotation/node-rotation-controller/build/image

go 1.26.4

require github.com/google/go-containerregistry v0.22.1

require (
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/opencontainers/go-digest v1.0.0 // indirect
	github.com/opencontainers/image-spec v1.1.1 // indirect
	golang.org/x/sync v0.24.0 // indirect
)
