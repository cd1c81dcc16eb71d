// Package deploy holds no code: it is the container image (Dockerfile),
// the Kubernetes manifests (kubernetes/, a kustomize base) and examples
// (examples/). Its tests decode every manifest strictly into the Kubernetes
// API types, so that a misspelt field fails `go test` instead of a rollout.
package deploy
