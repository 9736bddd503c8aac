# EventDB: the single entry point for humans and CI. `make help` lists the targets.
SHELL := /bin/bash
NPM_STAMP := node_modules/.package-lock.json
#: NODE_ARGS   extra options for the node of `make run-node`, e.g. NODE_ARGS="--http-port 2114" (see node/bin/eventdb --help)
NODE_ARGS ?=
#: BENCH_SECTIONS   benchmark sections for `make bench`, e.g. BENCH_SECTIONS=engine,http (default: all)

.PHONY: help deps build proto test test-tools test-unit test-integration run-node bench check typecheck clean

help: ## list the targets and the variables they take
	@echo 'Targets:'
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-zA-Z0-9_-]+):.*## /  \1\t/' | sort | expand -t 20
	@echo 'Variables (make <target> NAME=value):'
	@grep -hE '^#: ' $(MAKEFILE_LIST) | sed -E 's/^#: ([A-Z0-9_]+) +/  \1\t/' | expand -t 20

$(NPM_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $(NPM_STAMP)

deps: $(NPM_STAMP) ## install npm dependencies (npm ci) when package-lock.json changed

build: deps ## compile TypeScript to dist/
	npx tsc -p tsconfig.json

proto: deps ## regenerate node/src/grpc/gen/ from the .proto files in node/proto/ (buf and protoc-gen-es from npm; the output is committed)
	PATH="$(CURDIR)/node_modules/.bin:$$PATH" npx buf generate --template node/proto/buf.gen.yaml

typecheck: deps ## type-check without emitting
	npx tsc -p tsconfig.json --noEmit

test: build test-tools ## all tests that run on this machine (unit, integration, crash, and later tiers); the outcome is printed last
	@rm -f .local/test-outcome.txt
	@npx vitest run --config test/vitest.config.ts; rc=$$?; cat .local/test-outcome.txt 2>/dev/null || echo 'no test outcome written'; exit $$rc

test-tools: ## programs the tests run besides Node.js (lua5.4 for the Argo CD health checks), from Debian when missing and root
	@command -v lua5.4 >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && { apt-get install -y -q lua5.4 >/dev/null 2>&1 || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q lua5.4 >/dev/null 2>&1; }; }; } || echo 'lua5.4 could not be installed: the Argo CD health checks are skipped'

test-unit: build ## unit tests only
	npx vitest run --config test/vitest.config.ts --project unit

test-integration: build ## integration and crash tests (real node processes)
	npx vitest run --config test/vitest.config.ts --project integration

#: SIM_SEEDS  seeds per cluster size for test-sim (default 1000)
test-sim: ## the seeded cluster simulation (elections, replication, crashes, partitions); SIM_SEED=<n> replays one
	npx vitest run --config test/vitest.config.ts --project sim

run-node: build ## run a single node (plain HTTP on 127.0.0.1:2113, data under ./data); NODE_ARGS adds options
	node/bin/eventdb --insecure --db ./data/db --index ./data/index $(NODE_ARGS)

bench: build ## benchmarks: engine, HTTP, disk baselines (figures printed and written to bench-results/)
	node dist/test/bench/run-bench.js

check: typecheck test ## typecheck and all tests

clean: ## remove build output
	rm -rf dist

-include test/k8s/k8s.mk

-include operator/operator.mk
