# Drydock: two commands on a fresh Debian 12 machine (as root):
#   make run    install what is missing, build, build the sandbox image, start the server on 127.0.0.1:8080
#   make stop   stop the dockerd that make run started, if it started one (never another engine)
#   make test   install and start the test dependencies, run every test, stop them again
SHELL := /bin/bash
GO ?= $(shell command -v go || echo /usr/local/go/bin/go)
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)

.PHONY: all build run stop test test-short bench fuzz lint image clean sdk

all: build

build: bin/drydock bin/toolboxd

bin/drydock: FORCE
	@mkdir -p bin
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/drydock ./cmd/drydock

# toolboxd runs inside the sandbox: static, no libc.
bin/toolboxd: FORCE
	@mkdir -p bin
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/toolboxd ./cmd/toolboxd

FORCE:

run: build
	./scripts/run.sh $(ARGS)

# Stops what make run leaves running: its own dockerd and that engine's
# Drydock sandboxes. An engine make run did not start is left alone.
stop:
	@. scripts/lib.sh && stop_dockerd

image: build
	./bin/drydock image build --profile headless
	./bin/drydock image build --profile desktop

test:
	./scripts/test.sh

# Unit tests only: no daemons, no images (what `go test ./...` does anyway).
test-short:
	$(GO) test ./...

# Every fuzz target for FUZZTIME each (make test runs them for 10s each);
# FUZZ=<regexp> picks targets, e.g. make fuzz FUZZ=Path FUZZTIME=10m.
FUZZTIME ?= 1m
fuzz:
	FUZZTIME=$(FUZZTIME) FUZZ='$(FUZZ)' GO=$(GO) ./scripts/fuzz.sh

bench: build
	./scripts/bench.sh

# Regenerates the SDKs' types from api/openapi.json after an API change:
# sdk/python/drydock/_schema.py, and sdk/typescript/src/schema.ts with the
# openapi-typescript pinned in its lockfile (needs npm). go test ./sdk says
# what else a new route needs.
sdk:
	$(GO) generate ./sdk

lint:
	@test -z "$$(gofmt -l .)" || { gofmt -l .; echo "gofmt: run 'gofmt -w .'"; exit 1; }
	$(GO) vet ./...

clean:
	rm -rf bin
