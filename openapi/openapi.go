// Package openapi holds Tidemark's HTTP contract. The server serves it at
// /openapi.yaml and its tests validate every response they see against it, so
// the spec and the handlers cannot drift apart silently.
package openapi

import _ "embed"

// Spec is openapi.yaml, the OpenAPI 3.1 description of every route.
//
//go:embed openapi.yaml
var Spec []byte
