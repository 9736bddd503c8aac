# EventDB: the single entry point for humans and CI. `make help` lists the targets.
SHELL := /bin/bash
NPM_STAMP := node_modules/.package-lock.json
#: NODE_ARGS   extra options for the node of `make run-node`, e.g. NODE_ARGS="--http-port 2114" (see node/bin/eventdb --help)
NODE_ARGS ?=
#: BENCH_SECTIONS   benchmark sections for `make bench`, e.g. BENCH_SECTIONS=engine,http (default: all)

.PHONY: help deps build web proto test test-tools test-unit test-integration test-browser run-node bench check typecheck clean

help: ## list the targets and the variables they take
	@echo 'Targets:'
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-zA-Z0-9_-]+):.*## /  \1\t/' | sort | expand -t 20
	@echo 'Variables (make <target> NAME=value):'
	@grep -hE '^#: ' $(MAKEFILE_LIST) | sed -E 's/^#: ([A-Z0-9_]+) +/  \1\t/' | expand -t 20

$(NPM_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $(NPM_STAMP)

deps: $(NPM_STAMP) ## install npm dependencies (npm ci) when package-lock.json changed

# dist/ is up to date when it is newer than every TypeScript source, the tsconfig and the lock
# file: `make run-node` then starts the node at once instead of compiling for ~40 s first.
BUILD_STAMP := dist/.build-stamp
TS_SOURCES := $(shell find node/src node/web/src operator/src test \( -name '*.ts' -o -name '*.tsx' \) -not -path '*/node_modules/*' 2>/dev/null)

$(BUILD_STAMP): $(NPM_STAMP) tsconfig.json $(TS_SOURCES)
	npx tsc -p tsconfig.json
	@$(MAKE) --no-print-directory web
	@touch $(BUILD_STAMP)

build: deps ## compile TypeScript to dist/ and the web interface to dist/node/web/
	npx tsc -p tsconfig.json
	@$(MAKE) --no-print-directory web
	@touch $(BUILD_STAMP)

web: deps ## the web interface only (node/web/): type-check, then bundle with Vite into dist/node/web/
	npx tsc -p node/web/tsconfig.json
	npx vite build --config node/web/vite.config.ts

proto: deps ## regenerate node/src/grpc/gen/ from the .proto files in node/proto/ (buf and protoc-gen-es from npm; the output is committed)
	PATH="$(CURDIR)/node_modules/.bin:$$PATH" npx buf generate --template node/proto/buf.gen.yaml

typecheck: deps ## type-check without emitting
	npx tsc -p tsconfig.json --noEmit

test: build test-tools ## all tests that run on this machine (unit, integration, crash, and later tiers); the outcome is printed last
	@rm -f .local/test-outcome.txt
	@npx vitest run --config test/vitest.config.ts; rc=$$?; cat .local/test-outcome.txt 2>/dev/null || echo 'no test outcome written'; exit $$rc

# apt_tool COMMAND,PACKAGE,MESSAGE: installs PACKAGE from Debian when COMMAND is missing (as root, with
# apt-get update only when the first try fails), else prints MESSAGE
apt_tool = command -v $(1) >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && { apt-get install -y -q $(2) >/dev/null 2>&1 || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q $(2) >/dev/null 2>&1; }; }; } || echo '$(3)'

test-tools: ## programs the tests run besides Node.js (the official Python client in a venv, cached; nft for the partition test, lua5.4 for the Argo CD health checks, Chromium for the web interface's browser tests, from Debian when missing and root; promtool from Go modules, cached)
	@command -v go >/dev/null && test/k8s/build.sh prometheus >/dev/null || echo 'promtool could not be built (needs Go >= 1.26): the metrics and alert-rule tests fail'
	@test/support/python-client.sh >/dev/null || echo 'the Python client kurrentdbclient could not be installed from PyPI: test/integration/grpc-client-python.test.ts fails'
	@$(call apt_tool,nft,nftables,nftables could not be installed: the network partition test fails)
	@$(call apt_tool,lua5.4,lua5.4,lua5.4 could not be installed: the Argo CD health checks are skipped)
	@$(call apt_tool,chromium,chromium,chromium could not be installed: the browser tests (test/browser/) fail)

test-unit: build ## unit tests only
	npx vitest run --config test/vitest.config.ts --project unit

test-integration: build ## integration and crash tests (real node processes)
	npx vitest run --config test/vitest.config.ts --project integration

test-browser: build test-tools ## the web interface's browser tests (Debian's Chromium, real nodes); screenshots in .local/web-screenshots/
	npx vitest run --config test/vitest.config.ts --project browser

#: SIM_SEEDS  seeds per cluster size for test-sim (default 1000)
test-sim: ## the seeded cluster simulation (elections, replication, crashes, partitions); SIM_SEED=<n> replays one
	npx vitest run --config test/vitest.config.ts --project sim

run-node: $(BUILD_STAMP) ## run a single node (plain HTTP on 127.0.0.1:2113, data under ./data); builds only when a source changed; NODE_ARGS adds options
	node/bin/eventdb --insecure --db ./data/db --index ./data/index $(NODE_ARGS)

bench: build ## benchmarks: engine, HTTP, disk baselines (figures printed and written to bench-results/)
	node dist/test/bench/run-bench.js

check: typecheck test ## typecheck and all tests

clean: ## remove build output
	rm -rf dist

-include test/k8s/k8s.mk

-include operator/operator.mk
