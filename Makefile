# pgsaga developer tasks. `make help` lists them. The tests start their own throwaway
# PostgreSQL (initdb + postgres must be installed); set PGSAGA_TEST_DATABASE_URL to use a server.

GO        ?= go
BENCHTIME ?= 1s
PKGS      ?= ./...
CHAOS_DURATION ?= 5m

.DEFAULT_GOAL := help
.PHONY: help test vet bench demo build lint fmt clean deps chaos

help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-8s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

deps: ## Download the Go modules
	$(GO) mod download

vet: ## go vet every package
	$(GO) vet $(PKGS)

test: deps vet ## Vet, then run every test with the race detector (starts its own PostgreSQL)
	$(GO) test -race -count=1 -timeout 12m $(PKGS)

bench: deps ## Run the benchmarks (BENCHTIME=1s by default)
	$(GO) test -run '^$$' -bench . -benchtime $(BENCHTIME) $(PKGS)

chaos: ## Run the chaos soak (CHAOS_DURATION=5m)
	$(GO) run ./internal/chaosrun -duration $(CHAOS_DURATION)

demo: ## Run the demo against a throwaway PostgreSQL
	$(GO) run ./cmd/pgsaga demo

build: ## Build bin/pgsaga
	$(GO) build -o bin/pgsaga ./cmd/pgsaga

lint: vet ## Check formatting (gofmt) and vet
	@unformatted="$$(gofmt -l $$(git ls-files --cached --others --exclude-standard '*.go'))"; \
	if [ -n "$$unformatted" ]; then echo "gofmt needed on:"; echo "$$unformatted"; exit 1; fi

fmt: ## Format the code (gofmt -w)
	gofmt -w $$(git ls-files --cached --others --exclude-standard '*.go')

clean: ## Remove build output
	rm -rf bin
