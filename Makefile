# pgsaga developer tasks. `make help` lists them. The tests start their own throwaway
# PostgreSQL (initdb + postgres must be installed); set PGSAGA_TEST_DATABASE_URL to use a server.
#
# The repository holds several Go modules (go.work lists them): the library at the root, the
# pgsaga binary and its console (cmd), the Stripe adapter (gateway/stripe), the offline client
# example (examples/offline-client), the performance lab (bench) and the chaos soak with the
# failover tests (soak). PKGS names every package of every one, so one `go test` schedules them
# all at once.

GO        ?= go
BENCHTIME ?= 1s
FUZZTIME  ?= 5s
MODULES   := . cmd gateway/stripe examples/offline-client bench soak
PKGS      ?= $(foreach m,$(MODULES),$(if $(filter .,$(m)),./...,./$(m)/...))
CHAOS_DURATION ?= 5m
CHAOS_CLUSTER  ?= single
CHAOS_FAILOVER_EVERY ?= 30s

.DEFAULT_GOAL := help
.PHONY: help test tools vet bench fuzz chaos chaos-failover demo build lint fmt clean deps model generate

help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-15s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

deps: ## Download the Go modules of every module
	@set -e; for m in $(MODULES); do (cd $$m && $(GO) mod download); done

tools: ## Install what the tests need when missing (stripe-mock into .tools/bin; chromium, gcc, patroni, etcd, pgbouncer with apt-get as root)
	.ci/install-tools test

# sqlc is built here only (go run, pinned; it is no dependency of any module): the generated code
# is checked in, and internal/keystore's TestGeneratedCodeIsFresh compares generated.sum, the
# hashes this target writes, with the files, so that CI never builds sqlc.
SQLC ?= $(GO) run github.com/sqlc-dev/sqlc/cmd/sqlc@v1.31.1

generate: ## Generate the key store's typed statements from its .sql files (sqlc v1.31.1) and stamp them
	cd internal/keystore && rm -f *.sql.go && $(SQLC) generate
	$(GO) test ./internal/keystore -run '^TestGeneratedCodeIsFresh$$' -count=1 -args -update-stamp

vet: ## go vet every package
	$(GO) vet $(PKGS)

# Every test runs against real parts: a throwaway PostgreSQL, headless Chromium for the console,
# stripe-mock for the Stripe adapter (installed by tools; PGSAGA_REQUIRE_STRIPE_MOCK=1: fail,
# never skip, without it).
test: deps tools vet ## Install tools, vet, run every test with the race detector (starts its own PostgreSQL)
	PGSAGA_REQUIRE_STRIPE_MOCK=1 $(GO) test -race -count=1 -timeout 12m $(PKGS)
	# Allocation budgets are counted without the race detector (its sync.Pool drops items at random).
	$(GO) test -count=1 -run 'Allocation' ./saga

model: ## Check the protocol model with spin (needs spin and gcc: .ci/install-tools model)
	@command -v spin >/dev/null 2>&1 || { echo "make model: spin is not installed (.ci/install-tools model, or apt-get install -y spin gcc)" >&2; exit 1; }
	saga/model/check.sh

bench: deps ## Run the benchmarks (BENCHTIME=1s by default)
	$(GO) test -run '^$$' -bench . -benchtime $(BENCHTIME) $(PKGS)

# go test -fuzz takes one target per run: find every Fuzz function under PKGS' directories and
# fuzz each for FUZZTIME (after its seed corpus, which `make test` also runs).
fuzz: ## Run every fuzz test briefly (FUZZTIME=5s each)
	@set -e; for dir in $$($(GO) list -f '{{.Dir}}' $(PKGS)); do \
		for target in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go 2>/dev/null | cut -d' ' -f2); do \
			echo "== $$target ($$dir)"; \
			$(GO) test -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME) $$dir; \
		done; \
	done

chaos: ## Run the chaos soak (CHAOS_DURATION=5m, CHAOS_CLUSTER=single|patroni-sync|patroni-async)
	$(GO) run ./soak/pgsaga-chaos -duration $(CHAOS_DURATION) -cluster $(CHAOS_CLUSTER) -failover-every $(CHAOS_FAILOVER_EVERY)

# The soak on a Patroni pair, once with synchronous and once with asynchronous replication,
# failing the primary over every CHAOS_FAILOVER_EVERY among the other faults.
chaos-failover: ## Run the chaos soak on a Patroni pair, sync then async (CHAOS_DURATION, CHAOS_FAILOVER_EVERY=30s)
	$(GO) run ./soak/pgsaga-chaos -duration $(CHAOS_DURATION) -cluster patroni-sync -failover-every $(CHAOS_FAILOVER_EVERY)
	$(GO) run ./soak/pgsaga-chaos -duration $(CHAOS_DURATION) -cluster patroni-async -failover-every $(CHAOS_FAILOVER_EVERY)

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
