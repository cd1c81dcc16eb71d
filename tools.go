//go:build tools

// Package tools pins the modules the packages being written will import, so
// that go.mod stays stable while several of them are built at once. Remove
// an import here once a real package imports it.
package tools

import (
	_ "github.com/Masterminds/semver/v3"
	_ "github.com/getkin/kin-openapi/openapi3"
	_ "github.com/go-co-op/gocron/v2"
	_ "github.com/google/go-cmp/cmp"
	_ "github.com/google/go-containerregistry/pkg/authn"
	_ "github.com/google/go-containerregistry/pkg/registry"
	_ "github.com/google/go-containerregistry/pkg/v1/remote"
	_ "github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/tern/v2/migrate"
	_ "github.com/labstack/echo/v4"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "golang.org/x/time/rate"
	_ "gopkg.in/yaml.v3"
)
