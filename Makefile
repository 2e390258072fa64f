# npud — run `make help` for the targets.
GO      ?= go
BINARY  ?= npud
# One version for the binary, the packages and the zip (packaging/version.sh).
VERSION ?= $(shell bash packaging/version.sh 2>/dev/null || echo 0.1.0~unknown)
LDFLAGS := -s -w -X github.com/npud/npud/daemon.Version=$(VERSION)
export GOTOOLCHAIN ?= local
# npud speaks JSON: every build leaves out gin's msgpack binding (its
# nomsgpack tag), the shipped binary's and the tests' alike, so the tests
# build what ships, and none compiles ugorji's codec (tens of seconds each).
# No DWARF: the shipped binary is stripped (-s -w), and Go's stacks and race
# reports take files and lines from Go's own tables, which stay; an ASan
# report names the Go functions from the symbol table, and the Go traceback
# printed when it aborts gives their lines. Without DWARF make test compiles
# about an eighth faster and links a third.
export GOFLAGS := -tags=nomsgpack -gcflags=all=-dwarf=false -ldflags=-w $(GOFLAGS)

# npud's OpenVINO GenAI test library (testdata/ovgenai): the tests build it
# themselves (npu/openvino/ovtestlib) and load it at run time, as npud
# loads the real library.
OVTEST := $(CURDIR)/testdata/ovgenai

# The official OpenVINO runtime from PyPI, pinned by
# testdata/openvino/requirements.txt, in a virtual environment made once
# (again when the pins change). make test checks npud's headers, discovery
# and test library against it (NPUD_OPENVINO_VENV); go test without it
# skips those checks.
OVVENV ?= $(CURDIR)/testdata/openvino/venv
OVPINS := $(CURDIR)/testdata/openvino/requirements.txt

# The official Python clients (openai, anthropic), pinned by
# testdata/python/requirements.txt, in a virtual environment made once
# (again when the pins change); go test finds it there, or at
# NPUD_PYTHON_VENV, and skips the Python client tests without it.
PYVENV ?= $(CURDIR)/testdata/python/venv
PYPINS := $(CURDIR)/testdata/python/requirements.txt

# make test vets once, in make check, and passes -vet=off to the go test runs
# after it; each target alone keeps go test's own vet.
TESTVET ?=

.PHONY: help build run test test-race test-engines test-tools js-clients agent-clis test-openvino test-openvino-real openvino-venv python-venv test-openvino-asan fuzz soak check bench package clean

help: ## list the targets
	@# Two passes: the widest target name sets the column.
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' \
	  '{ name[NR] = $$1; text[NR] = $$2; if (length($$1) > w) w = length($$1) } \
	   END { for (i = 1; i <= NR; i++) printf "  %-*s  %s\n", w, name[i], text[i] }'

build: ## build the npud binary: the OpenVINO engine (loaded at run time) and the simulated one
	CGO_ENABLED=1 $(GO) build -tags nomsgpack -ldflags '$(LDFLAGS)' -o $(BINARY) .

run: build ## start the daemon on 127.0.0.1:11434, or NPUD_LISTEN (OpenVINO when installed with a model, else simulated)
	./$(BINARY) serve

# npud's linter (tools/lint, a module of its own): go vet's analyzers and
# the linters .golangci.yml enables, with its settings, in one go vet tool.
# A cold build takes minutes where golangci-lint's takes tens (issue 35).
NPUDLINT := $(CURDIR)/bin/npudlint
MODULE   := github.com/npud/npud

check: ## gofmt, go vet with npud's linter (errcheck, errorlint, staticcheck, ...: tools/lint), the cgo-less and Windows builds, the layering and dependency guards
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	@echo "== npud's linter (tools/lint): build it, and check it finds each linter's fault"
	$(GO) build -C tools/lint -o $(NPUDLINT) .
	$(GO) test -C tools/lint -count=1 ./...
	@echo "== go vet ./... with go vet's analyzers and .golangci.yml's linters"
	$(GO) vet -vettool=$(NPUDLINT) ./...
	@# Without cgo npud has the simulated engine only, and the Windows service build
	@# has no cgo either: every package must keep compiling in both. Compiled, not
	@# vetted again: a vet compiles the tests' client SDKs too, most of its time, and
	@# the tests run on Linux with cgo only. The packages with Windows files of their
	@# own (npu/hub, npu/worker) are vetted there; tests need no SDK.
	CGO_ENABLED=0 $(GO) build -tags nomsgpack ./...
	GOOS=windows GOARCH=amd64 CGO_ENABLED=0 $(GO) build -tags nomsgpack ./...
	GOOS=windows GOARCH=amd64 CGO_ENABLED=0 $(GO) vet ./npu/hub/ ./npu/worker/
	GOOS=windows GOARCH=amd64 CGO_ENABLED=0 $(GO) build -tags nomsgpack -o /dev/null .
	@# The root package's tests, all of them, once: the arrows between packages, the
	@# CGO_ENABLED=0 link, and what the binary links (deps.txt; a new dependency:
	@# go test -run TestDependencies -update .). The race run below leaves them out.
	$(GO) test -count=1 -timeout 5m .

test: ## vet, then every test under the race detector
	@$(MAKE) --no-print-directory test-tools
	@# make check and the installs at once: the one is CPU, the others mostly network.
	@# No --output-sync: it would hold each command's lines until it ends.
	@$(MAKE) --no-print-directory -j5 check js-clients agent-clis python-venv openvino-venv
	@# Vetted once, by make check: -vet=off from here on. Then two streams at once:
	@# the race run, whose test binaries spend about half their time waiting on
	@# servers, clients and child processes (half of two cores idle, measured), and
	@# the engine checks, whose builds of their own (ASan, fuzz) fill that time.
	@$(MAKE) --no-print-directory -j2 test-race test-engines TESTVET=-vet=off

test-race: ## every package's tests under the race detector, but the root package's (make check runs those)
	@# A timeout of our own for each package's test binary: Go's default 10 minutes
	@# is too tight for the daemon's suite under -race on a loaded machine.
	@echo "== go test -race: every package but the root one"
	NPUD_PYTHON_VENV=$(PYVENV) CGO_ENABLED=1 $(GO) test -race $(TESTVET) -count=1 -timeout 30m $$($(GO) list ./... | grep -vx '$(MODULE)')

# The race build last: by then the race run has compiled it.
test-engines: ## the checks against OpenVINO (the official wheels, ASan, the API suites on the OpenVINO engine) and fuzzing, one after the other
	$(MAKE) --no-print-directory test-openvino-real
	$(MAKE) --no-print-directory test-openvino-asan
	@# A count, not a duration: Go 1.26's fuzz coordinator can fail a duration
	@# run at its deadline with no crasher on a loaded machine (go.dev/issue/75804).
	$(MAKE) --no-print-directory fuzz FUZZTIME=20000x
	$(MAKE) --no-print-directory test-openvino

test-tools: ## the Debian packages the tests need (apt-get, as root), when the machine lacks them
	@# -race needs a C compiler, the proxy tests nginx and HAProxy, the JS client tests Node,
	@# the unit and package checks systemd-analyze, lintian, rpm and shellcheck,
	@# the web console's tests Chromium, the audio tests espeak-ng, sox, lame and ffmpeg
	@# (ffmpeg is also npud's optional decoder of Opus, WebM and M4A), the docs' examples curl:
	@# a fresh Debian may lack them.
	@missing=""; command -v gcc >/dev/null || missing="gcc libc6-dev"; \
	[ -x /usr/sbin/nginx ] || command -v nginx >/dev/null || missing="$$missing nginx-light"; \
	[ -x /usr/sbin/haproxy ] || command -v haproxy >/dev/null || missing="$$missing haproxy"; \
	command -v npm >/dev/null || missing="$$missing nodejs npm"; \
	command -v systemd-analyze >/dev/null || missing="$$missing systemd"; \
	command -v lintian >/dev/null || missing="$$missing lintian"; \
	command -v rpm >/dev/null || missing="$$missing rpm"; \
	command -v shellcheck >/dev/null || missing="$$missing shellcheck"; \
	command -v chromium >/dev/null || missing="$$missing chromium"; \
	command -v x86_64-w64-mingw32-gcc >/dev/null || missing="$$missing gcc-mingw-w64-x86-64"; \
	command -v zip >/dev/null || missing="$$missing zip"; \
	command -v curl >/dev/null || missing="$$missing curl"; \
	command -v espeak-ng >/dev/null || missing="$$missing espeak-ng"; \
	command -v sox >/dev/null || missing="$$missing sox"; \
	command -v lame >/dev/null || missing="$$missing lame"; \
	command -v ffmpeg >/dev/null || missing="$$missing ffmpeg"; \
	python3 -c 'import ensurepip, venv' 2>/dev/null || missing="$$missing python3-venv"; \
	if [ -n "$$missing" ]; then echo "== apt-get: installing$$missing (what each is for: docs/TESTING.md)"; \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o Dpkg::Use-Pty=0 $$missing; fi

js-clients: ## the official JS clients in testdata/js (npm ci, once)
	@# The official JS clients, pinned by testdata/js/package-lock.json.
	@[ -d testdata/js/node_modules/ollama ] && [ -d testdata/js/node_modules/openai ] && [ -d testdata/js/node_modules/@anthropic-ai/sdk ] || \
	  { echo "== npm ci in testdata/js: the official JS clients (ollama, openai, @anthropic-ai/sdk)"; \
	    cd testdata/js && npm ci --no-audit --no-fund --loglevel=error && echo "== npm ci in testdata/js: done"; }

agent-clis: ## OpenCode, Claude Code and Codex CLI in testdata/agents (one npm install, once)
	@# OpenCode, Claude Code and Codex CLI (native binaries), pinned by
	@# testdata/agents/package-lock.json: one install for the three. npm install, not
	@# npm ci: the lock holds only the platform packages the registry serves here,
	@# and npm ci refuses a lock without every optional platform package; install
	@# keeps the lock's versions and integrity (--no-save: the lock is never rewritten).
	@[ -d testdata/agents/node_modules/@anthropic-ai/claude-code ] && [ -d testdata/agents/node_modules/@openai/codex ] && [ -d testdata/agents/node_modules/opencode-ai ] || \
	  { echo "== npm install in testdata/agents: OpenCode, Claude Code and Codex CLI (1.1 GB)"; \
	    cd testdata/agents && npm install --no-save --no-audit --no-fund --loglevel=error && echo "== npm install in testdata/agents: done"; }

openvino-venv: ## the pinned official OpenVINO wheels from PyPI in testdata/openvino/venv (once)
	@if [ -f $(OVVENV)/pins.txt ] && cmp -s $(OVVENV)/pins.txt $(OVPINS); then exit 0; fi; \
	if [ -d $(OVVENV) ] && [ ! -f $(OVVENV)/pins.txt ]; then echo "using $(OVVENV) as it is (not made here)"; exit 0; fi; \
	echo "installing the pinned OpenVINO wheels (testdata/openvino/requirements.txt) into $(OVVENV)"; \
	rm -rf $(OVVENV) && python3 -m venv $(OVVENV) && \
	$(OVVENV)/bin/pip install -q --disable-pip-version-check --no-deps -r $(OVPINS) && cp $(OVPINS) $(OVVENV)/pins.txt && \
	echo "installed the OpenVINO wheels" || { \
	  rm -rf $(OVVENV); \
	  echo "make openvino-venv: could not install the pinned OpenVINO wheels from PyPI (is pypi.org reachable?)."; \
	  echo "make test checks npud's headers, discovery and test library against them. Without PyPI:"; \
	  echo "  make test OVVENV=/path/to/a/venv   a virtual environment with exactly those wheels, or"; \
	  echo "  pip download -r testdata/openvino/requirements.txt --no-deps -d DIR on a machine with PyPI,"; \
	  echo "  then pip install --no-index --no-deps DIR/*.whl into a venv and pass it as OVVENV."; \
	  exit 1; }

python-venv: ## the pinned official Python clients from PyPI in testdata/python/venv (once)
	@if [ -f $(PYVENV)/pins.txt ] && cmp -s $(PYVENV)/pins.txt $(PYPINS); then exit 0; fi; \
	if [ -d $(PYVENV) ] && [ ! -f $(PYVENV)/pins.txt ]; then echo "using $(PYVENV) as it is (not made here)"; exit 0; fi; \
	echo "installing the pinned Python clients (testdata/python/requirements.txt) into $(PYVENV)"; \
	rm -rf $(PYVENV) && python3 -m venv $(PYVENV) && \
	$(PYVENV)/bin/pip install -q --disable-pip-version-check --no-deps -r $(PYPINS) && cp $(PYPINS) $(PYVENV)/pins.txt && \
	echo "installed the Python clients" || { \
	  rm -rf $(PYVENV); \
	  echo "make python-venv: could not install the pinned Python packages from PyPI (is pypi.org reachable?)."; \
	  echo "  make test PYVENV=/path/to/a/venv   a virtual environment with exactly testdata/python/requirements.txt"; \
	  exit 1; }

# npud against the official runtime: the vendored core headers, discovery
# in a Python environment, the dependency chain, the core's answers, and
# the conformance suite. Without -race: with OpenVINO's CPU plugin loaded,
# a -race binary now and then crashes in the Go runtime.
test-openvino-real: openvino-venv ## npud's headers, discovery and test library against the official OpenVINO wheels
	@# The whole binding (every cgo preamble) compiled against the wheel's core C headers.
	CGO_ENABLED=1 CGO_CFLAGS="-I$$(ls -d $(OVVENV)/lib/python3*/site-packages/openvino/include)" $(GO) build -o /dev/null ./npu/openvino/
	NPUD_OPENVINO_VENV=$(OVVENV) CGO_ENABLED=1 $(GO) test $(TESTVET) -count=1 -timeout 15m -run '^TestOfficial' ./npu/openvino/ ./daemon/ ./cli/ ./npu/chatfmt/

# The API suites' tests that reach no engine, which make test-openvino leaves
# out: the framing goldens (scripted events), the refusal tests (a fake
# router), and the encoders', the response store's and the request
# mapping's unit tests (the API fuzzers live in packages of their own). A
# name that goes stale only makes a test run twice.
ENGINE_FREE := ^(TestFramingTranscripts|TestRefusalsFromTheRunner|TestMessagesRefusalsFromTheRunner|TestChunkEncoder.*|TestErrorJSONShape|TestBenchmarkFramesAgree|TestResponseStore.*|TestToError|TestToEngineRequest|TestToolInput|TestSystemMessageAmongTurns)$$

test-openvino: ## the API suites on the OpenVINO engine through npud's GenAI test library; the headers alone
	$(MAKE) --no-print-directory -C testdata/ovgenai check-headers
	@# The binding's own tests ran in `go test ./...`, through run-time
	@# loading; here the API suites run on the OpenVINO engine, the tests that
	@# reach it only: those that need the simulator's text, timing or faults
	@# skip themselves, and so do those that bring their own engine
	@# (daemontest.Start); ENGINE_FREE reach no engine. go test ./... ran all of them.
	NPUD_TEST_ENGINE=openvino CGO_ENABLED=1 $(GO) test $(TESTVET) -race -count=1 -timeout 20m \
	  -skip '$(ENGINE_FREE)' ./openaiapi/ ./ollamaapi/ ./wsapi/ ./anthropicapi/

# The same binding against the test library built with AddressSanitizer:
# a use of a freed pipeline, config or history aborts the run. go test -asan
# instruments the Go side too; it does not combine with -race, so this run is
# the binding's tests and the daemon's OpenVINO suites once more, without it.
OVASAN := $(OVTEST)/build-asan
test-openvino-asan: ## the cgo binding and the daemon's OpenVINO suites under AddressSanitizer
	$(MAKE) --no-print-directory -C testdata/ovgenai OUT=build-asan EXTRA_CFLAGS="-fsanitize=address -fno-omit-frame-pointer"
	NPUD_OVTEST_LIB=$(OVASAN) ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 CGO_ENABLED=1 $(GO) test $(TESTVET) -asan -count=1 -timeout 20m ./npu/openvino/
	NPUD_OVTEST_LIB=$(OVASAN) ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 CGO_ENABLED=1 $(GO) test $(TESTVET) -asan -count=1 -timeout 20m -run OpenVINO ./daemon/

SOAK_STREAMS ?= 5000
SOAK_WORKER_STREAMS ?= 600
soak: ## the soak and fault harness at full size (make test runs a small one): SOAK_STREAMS streams, direct and through nginx
	NPUD_SOAK_STREAMS=$(SOAK_STREAMS) NPUD_SOAK_WORKER_STREAMS=$(SOAK_WORKER_STREAMS) $(GO) test -race -count=1 -run 'Soak' -v -timeout 60m ./daemon/e2e/ 2>&1 | grep --line-buffered -v 'level='

FUZZTIME ?= 60s
# Each target's bound as a whole; a FUZZTIME near it needs a larger one.
FUZZTIMEOUT ?= 15m
fuzz: ## fuzz the request decoders, stream writers and filters, the schema matcher (FUZZTIME each; seeds in testdata/fuzz)
	$(GO) test $(TESTVET) -timeout $(FUZZTIMEOUT) -run '^$$' -fuzz '^FuzzStreamFilters$$' -fuzztime $(FUZZTIME) ./npu/
	$(GO) test $(TESTVET) -timeout $(FUZZTIMEOUT) -run '^$$' -fuzz '^FuzzToolCallParser$$' -fuzztime $(FUZZTIME) ./npu/chatfmt/
	$(GO) test $(TESTVET) -timeout $(FUZZTIMEOUT) -run '^$$' -fuzz '^FuzzAppendJSONString$$' -fuzztime $(FUZZTIME) ./npu/wirefmt/openaiwire/
	$(GO) test $(TESTVET) -timeout $(FUZZTIMEOUT) -run '^$$' -fuzz '^FuzzChatCompletions$$' -fuzztime $(FUZZTIME) ./openaiapi/fuzz/
	$(GO) test $(TESTVET) -timeout $(FUZZTIMEOUT) -run '^$$' -fuzz '^FuzzGenerateAndChat$$' -fuzztime $(FUZZTIME) ./ollamaapi/fuzz/
	$(GO) test $(TESTVET) -timeout $(FUZZTIMEOUT) -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME) ./wire/audioin/
	$(GO) test $(TESTVET) -timeout $(FUZZTIMEOUT) -run '^$$' -fuzz '^FuzzMatcher$$' -fuzztime $(FUZZTIME) ./npu/jsonschema/

bench: ## benchmarks: bridge cost per chunk, SSE encoding per chunk, structured output's matcher per byte
	$(GO) test -run '^$$' -bench . -benchmem ./npu/ ./npu/serve/ ./openaiapi/ ./npu/jsonschema/

package: ## .deb and .rpm in dist/ (nfpm): binary, hardened unit, default configuration, docs; the Windows zip
	@# cgo on, PIE, full RELRO: what Debian expects of a binary (lintian).
	CGO_ENABLED=1 $(GO) build -tags nomsgpack -buildmode=pie \
	  -ldflags '$(LDFLAGS) -linkmode=external -extldflags=-Wl,-z,relro,-z,now' -o $(BINARY) .
	VERSION=$(VERSION) bash packaging/build.sh
	@# The Windows zip: npud.exe with the engine, cross-compiled with mingw-w64.
	VERSION=$(VERSION) bash packaging/build-windows.sh

clean: ## remove build output
	rm -rf $(BINARY) dist
	$(MAKE) -C testdata/ovgenai clean
