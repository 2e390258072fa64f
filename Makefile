# npud — run `make help` for the targets.
GO      ?= go
BINARY  ?= npud
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X github.com/npud/npud/daemon.Version=$(VERSION)
export GOTOOLCHAIN ?= local

.PHONY: help build run test check bench clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-8s %s\n", $$1, $$2}'

build: ## build the npud binary (simulated engine)
	$(GO) build -tags nomsgpack -ldflags '$(LDFLAGS)' -o $(BINARY) .

run: build ## start the daemon on 127.0.0.1:11434 with the simulated engine
	./$(BINARY) serve

check: ## gofmt and go vet
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...

test: check ## vet, then every test under the race detector
	@# The race detector needs a C compiler; a fresh Debian may lack one.
	@command -v gcc >/dev/null || { echo "installing gcc (needed by -race)"; apt-get update -qq && apt-get install -y -qq gcc libc6-dev; }
	CGO_ENABLED=1 $(GO) test -race -count=1 ./...

bench: ## benchmarks: bridge cost per chunk, SSE encoding per chunk
	$(GO) test -run '^$$' -bench . -benchmem ./npu/ ./openaiapi/

clean: ## remove build output
	rm -f $(BINARY)
