# hub — make targets. `make demo` runs a delegation end to end; `make test` runs every test.
GO      ?= go
BIN     := bin/hub
# The version comes from the build itself (Go stamps the commit and tag), as
# for go build and go install; a release may set VERSION to override it.
VERSION ?=
LDFLAGS := $(if $(VERSION),-X github.com/hub-agents/hub/hub/cli.Version=$(VERSION))

.PHONY: build runners test demo bench lint check faults fuzz clean protocol vsix cross cli-docs

build:
	$(GO) build -buildvcs=auto -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/hub

## runners: build the remote runners beside hub (bin/hub-temporal: hub with its Temporal relay and worker).
runners: build
	cd hub/temporal && $(GO) build -buildvcs=auto -ldflags "$(LDFLAGS)" -o ../../bin/hub-temporal ./cmd/hub-temporal

## test: install what the tests need when missing, then run them all.
test:
	./scripts/test.sh

## demo: one delegation end to end on a sample repo; needs no key and no network.
demo: build
	./$(BIN) demo

## bench: run the benchmarks (about 25 minutes) and rewrite docs/benchmarks.md and docs/benchmarks/*.svg.
bench: build
	$(GO) run ./bench/cmd/benchreport -out docs/benchmarks.md

## protocol: regenerate the editor's TypeScript types and docs/protocol.md from hub/protocol.
protocol:
	$(GO) run ./cmd/protogen

## cli-docs: regenerate docs/cli-reference.md, every command's usage and flags, from the cobra command tree
## (TestCLIReferenceCurrent in hub/cli fails while it is stale).
cli-docs:
	$(GO) run ./cmd/clidoc

## vsix: build and package the VS Code extension (vscode-extension/hub-vscode.vsix).
vsix:
	npm install --no-audit --no-fund
	npm run package -w vscode-extension

## faults: the fault suite at a bigger size (HUB_FAULTS_REPEAT runs of each case); rewrites docs/reliability.md.
faults:
	HUB_FAULTS_REPORT=$(CURDIR)/docs/reliability.md HUB_FAULTS_REPEAT=$${HUB_FAULTS_REPEAT:-3} $(GO) test ./hub/faults -count=1 -v -timeout 30m

## fuzz: every fuzz target in turn, each for FUZZTIME (default 5m); see docs/fuzzing.md.
FUZZTIME ?= 5m
FUZZ_TARGETS := ./hub/rpc:FuzzReadFrame ./hub/engine/claude:FuzzParse ./hub/engine/codex:FuzzParse \
	./hub/engine/codex:FuzzShellScript ./hub/engine/opencode:FuzzParse ./hub/engine/agentcli:FuzzReadLine \
	./hub/engine/acp:FuzzParseUpdate ./hub/redact:FuzzString ./hub/redact:FuzzEnvFileValues ./agent/tool:FuzzResolve ./hub/install:FuzzTOMLSplice ./internal/tomltext:FuzzRoundTrip
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		echo "fuzz: $${t#*:} in $${t%%:*} for $(FUZZTIME)"; \
		$(GO) test $${t%%:*} -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZTIME) -parallel 1; \
	done

## cross: build and vet the core module for macOS (amd64, arm64) and Windows (amd64), cross-compiled
## (built and vetted only: the tests run on Linux). hub/temporal, a module of its own, is not cross-built.
CROSS_TARGETS := darwin/amd64 darwin/arm64 windows/amd64
cross:
	@set -e; for t in $(CROSS_TARGETS); do \
		echo "cross: $$t"; \
		GOOS=$${t%/*} GOARCH=$${t#*/} $(GO) build ./...; \
		GOOS=$${t%/*} GOARCH=$${t#*/} $(GO) vet ./...; \
	done

## lint: gofmt, go vet, and go.mod/go.sum as `go mod tidy` leaves them, in both modules.
lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt: files above need formatting"; exit 1; }
	$(GO) vet ./...
	cd hub/temporal && $(GO) vet ./...
	@$(GO) mod tidy -diff || { echo "go.mod: run go mod tidy"; exit 1; }
	@cd hub/temporal && $(GO) mod tidy -diff || { echo "hub/temporal/go.mod: run go mod tidy there"; exit 1; }

## check: the contributors' fast lane: lint, then the unit tests with -short (no end-to-end, fault,
## CLI or benchmark suites; nothing installed). `make test` runs everything, as CI does.
SLOW_PKGS := /hub/e2e$$|/hub/faults$$|/hub/cli$$|/bench/
check: lint
	$(GO) test -short $$($(GO) list ./... | grep -Ev '$(SLOW_PKGS)')

clean:
	rm -rf bin
