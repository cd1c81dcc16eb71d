# Tidemark. `make run` serves deploy/examples/tidemark.yaml; `make test` runs
# every test. Both start a throwaway Postgres when DATABASE_URL is unset.
GO        ?= go
CONFIG    ?= deploy/examples/tidemark.yaml
BIN       := bin/tidemark
PKGS      := ./...
# `tidemark version` prints these; make image and make release reuse them.
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT    ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS   := -X main.version=$(VERSION) -X main.commit=$(COMMIT)

.PHONY: all build run demo image test bench lint fmt vet clean

all: lint test

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/tidemark

# The local cluster for `make run` is kept in tmp/pg so pins, tokens and the
# index survive restarts.
run: build
	scripts/with-pg --keep tmp/pg $(BIN) serve --hints --config $(CONFIG)

# The same channels as make run, offline: an in-process registry seeded with
# realistic juju and k3s tag histories, and a throwaway Postgres.
demo: build
	scripts/with-pg $(BIN) demo

test:
	scripts/with-pg $(GO) test -count=1 -timeout 20m $(PKGS)

bench:
	scripts/with-pg $(GO) test -run '^$$' -bench . -benchmem $(PKGS)

lint: fmt vet

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

# The container image (deploy/Dockerfile). Needs a container engine; this
# project's CI machines have none, so deploy/ tests check the file instead.
image:
	docker build -f deploy/Dockerfile -t tidemark:dev .

clean:
	rm -rf bin tmp

# wrk against a channel URL and a bare 302 handler (the floor), side by side.
.PHONY: bench-serve
bench-serve:
	scripts/bench-serve

# 10,000 tags into a distribution registry: crane ls, first index, digests,
# no-change rescan and peak RSS side by side.
.PHONY: bench-index
bench-index:
	scripts/bench-index
