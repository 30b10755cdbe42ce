# saver: a LangGraph checkpoint store as an HTTP service.
# `make run` starts the service on the embedded store; `make test` installs what
# the tests need into this folder (.venv, .cache) and runs every test.

GO      ?= go
PYTHON  ?= python3
VENV    ?= .venv
PY      := $(VENV)/bin/python
BIN     := bin/saver
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)

.PHONY: build
build:
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/saver

.PHONY: run
run: build
	$(BIN) serve

# The venv is rebuilt when the client's pins change.
$(VENV)/.installed: python/pyproject.toml python/constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -c python/constraints.txt -e 'python[test]'
	touch $@

.PHONY: venv
venv: $(VENV)/.installed

# The Go unit tests run while everything the other suites need is installed
# (venvs, npm packages, Chromium, the local AWS stack's servers), which is
# mostly waiting on downloads; each one's output is printed whole when it ends.
.PHONY: test
test:
	$(MAKE) --no-print-directory -j2 --output-sync=target test-go test-deps
	$(MAKE) --no-print-directory test-py test-e2e test-js test-agent-server test-aws

.PHONY: test-go
test-go:
	$(GO) test -race -count=1 ./...

# The Python client's tests (python/tests), against a service of their own.
.PHONY: test-py
test-py: build venv
	SAVER_BIN=$(abspath $(BIN)) $(PY) -m pytest -q python/tests

# The service's own behaviour, through the Python client (e2e/): /ui in a
# browser, TLS, metrics, kill -9 and SIGTERM under load, restarts, replicas,
# concurrent calls, large values, DynamoDB and S3 failing. They share the
# client tests' fixtures (python/tests/support/) and pytest settings
# (python/pyproject.toml, hence -c).
E2E = $(PY) -m pytest -q -c python/pyproject.toml --rootdir e2e

.PHONY: test-e2e
test-e2e: build venv ui-deps
	SAVER_BIN=$(abspath $(BIN)) $(E2E) e2e

# The TypeScript client (js/): its npm packages are installed from
# js/package-lock.json into js/node_modules, only when missing or when the lock
# changed (npm rewrites node_modules/.package-lock.json on every install).
JS_STAMP := js/node_modules/.package-lock.json
VITEST   := js/node_modules/.bin/vitest
TSC      := js/node_modules/.bin/tsc

$(JS_STAMP): js/package-lock.json
	npm ci --prefix js --ignore-scripts --no-audit --no-fund --loglevel=error
	touch $@

.PHONY: js-deps
js-deps: $(JS_STAMP)
	@test -x $(VITEST) -a -x $(TSC) || npm ci --prefix js --ignore-scripts --no-audit --no-fund --loglevel=error

# Builds the package (types included), type-checks the tests, then runs them:
# LangGraph.js's validation suite, graphs compared with MemorySaver, a kill -9
# restart, the payment workflow, inspect and /ui, against services on the
# store the environment names (embedded by default; test-aws: DynamoDB).
JS_TEST = cd js && ../$(TSC) -p tsconfig.json && ../$(TSC) -p tsconfig.check.json && \
	SAVER_BIN=$(abspath $(BIN)) SAVER_PYTHON=$(abspath $(PY)) ../$(VITEST) run

.PHONY: test-js
test-js: build venv ui-deps js-deps
	$(JS_TEST)

# The Agent Server example's image: langgraph-cli (pinned in
# examples/agent_server/requirements-cli.txt, in a venv of its own) writes the
# Dockerfile, and the test replays its install step into a clean venv.
AGENT_CLI_VENV := .cache/agent-server-cli

$(AGENT_CLI_VENV)/.installed: examples/agent_server/requirements-cli.txt
	$(PYTHON) -m venv $(AGENT_CLI_VENV)
	$(AGENT_CLI_VENV)/bin/python -m pip install -q -r examples/agent_server/requirements-cli.txt
	touch $@

# And `langgraph dev` serving the example on a live service (test_dev.py):
# langgraph-cli[inmem] (examples/agent_server/requirements-dev.txt) with the
# client installed editable from ./python, in a venv of its own.
AGENT_DEV_VENV := .cache/agent-server-dev

$(AGENT_DEV_VENV)/.installed: examples/agent_server/requirements-dev.txt python/pyproject.toml
	$(PYTHON) -m venv $(AGENT_DEV_VENV)
	$(AGENT_DEV_VENV)/bin/python -m pip install -q -r examples/agent_server/requirements-dev.txt
	$(AGENT_DEV_VENV)/bin/python -m pip install -q -c examples/agent_server/requirements-dev.txt -e ./python
	touch $@

.PHONY: test-agent-server
test-agent-server: build venv $(AGENT_CLI_VENV)/.installed $(AGENT_DEV_VENV)/.installed
	SAVER_BIN=$(abspath $(BIN)) LANGGRAPH_CLI=$(abspath $(AGENT_CLI_VENV))/bin/langgraph \
		LANGGRAPH_DEV=$(abspath $(AGENT_DEV_VENV))/bin/langgraph \
		$(PY) -m pytest -q -p no:cacheprovider -o asyncio_default_fixture_loop_scope=function examples/agent_server

# What the suites after test-go need (the variables above are set by now:
# make reads a rule's prerequisites where it stands).
.PHONY: test-deps
test-deps: build venv ui-deps js-deps $(AGENT_CLI_VENV)/.installed $(AGENT_DEV_VENV)/.installed
	localstack/up.sh --install

.PHONY: lint
lint:
	test -z "$$(gofmt -l .)"
	$(GO) vet ./...

# Local AWS stack for the integration tests (dynoxide + LocalStack's S3, or
# moto), on free loopback ports; endpoints in $(LOCALSTACK_ENV).
LOCALSTACK_ENV := .cache/localstack/env

.PHONY: localstack-up
localstack-up:
	localstack/up.sh

.PHONY: localstack-down
localstack-down:
	localstack/down.sh

# Starts the stack, runs every test with the integration tag against it and
# stops the stack whether the tests pass or not.
.PHONY: test-integration
test-integration:
	rc=0; localstack/up.sh && { set -a && . ./$(LOCALSTACK_ENV) && set +a && \
		$(GO) test -race -count=1 -tags integration ./...; } || rc=$$?; \
	localstack/down.sh; exit $$rc

# The production stores on the local AWS stack: the Go integration tests (the
# history checks of lincheck/ beside the others, each on tables of its own),
# then the whole Python suite (conformance, graphs), the service's (e2e/:
# restarts, kills, replicas, faults) and the whole JS suite against services
# on the dynamodb store. The stack is stopped whether
# the tests pass or not. The dynamo package alone takes about 6 minutes under
# -race on 2 cores, and more on a busy machine, near go test's default
# 10-minute limit: hence -timeout. Its thread of 10,000 checkpoints
# (TestListNodesLongThread) is 2,500 here, 10,000 in make soak.
.PHONY: test-aws
test-aws: build venv ui-deps js-deps
	rc=0; localstack/up.sh && { set -a && . ./$(LOCALSTACK_ENV) && set +a && \
		{ $(GO) test -race -count=1 -tags integration -run 'TestDynamo' ./lincheck/ & lin=$$!; \
		  $(GO) test -race -count=1 -timeout 25m -tags integration ./dynamo/... ./s3offload/... ./localstack/... ./faults/...; \
		  go_rc=$$?; wait $$lin && [ $$go_rc -eq 0 ]; } && \
		SAVER_BIN=$(abspath $(BIN)) SAVER_STORE=dynamodb SAVER_INIT=true \
		SAVER_TABLE=saver-pytest-$$$$ SAVER_BUCKET=saver-pytest-$$$$ \
		$(PY) -m pytest -q python/tests && \
		SAVER_BIN=$(abspath $(BIN)) SAVER_STORE=dynamodb SAVER_INIT=true \
		SAVER_TABLE=saver-e2e-$$$$ SAVER_BUCKET=saver-e2e-$$$$ \
		$(E2E) e2e && \
		export SAVER_STORE=dynamodb SAVER_INIT=true \
			SAVER_TABLE=saver-jstest-$$$$ SAVER_BUCKET=saver-jstest-$$$$ && \
		( $(JS_TEST) ); } || rc=$$?; \
	localstack/down.sh; exit $$rc

# Runs examples/payment_workflow.py against a temporary service (free port,
# temporary database), then stops the service, whether the example passes or not.
.PHONY: example
example: build venv
	@tmp=$$(mktemp -d); \
	$(BIN) serve -addr 127.0.0.1:0 -addr-file $$tmp/addr -db $$tmp/saver.db >$$tmp/service.log 2>&1 & pid=$$!; \
	trap 'kill $$pid 2>/dev/null; wait $$pid 2>/dev/null; rm -rf $$tmp' EXIT; \
	for i in $$(seq 300); do \
		grep -qs ':[0-9][0-9]*$$' $$tmp/addr && break; \
		kill -0 $$pid 2>/dev/null || break; \
		sleep 0.1; \
	done; \
	grep -qs ':[0-9][0-9]*$$' $$tmp/addr || { echo "saver did not start:"; cat $$tmp/service.log; exit 1; }; \
	SAVER_URL=http://$$(cat $$tmp/addr) $(PY) examples/payment_workflow.py

# Benchmarks against the savers users would otherwise pick (AWS's DynamoDBSaver,
# PostgresSaver, SqliteSaver, InMemorySaver): see bench/PERFORMANCE.md. Not part
# of `make test`. Installs its venv (bench/requirements.txt) into $(BENCH_VENV),
# starts the local AWS stack and PostgreSQL with bench/aws.sh and bench/pg.sh,
# and stops them at the end. Results go to bench/results/.
BENCH_VENV ?= .cache/bench-venv
BENCH_PY   := $(BENCH_VENV)/bin/python
BENCH_BIN  := .cache/bench/bin

$(BENCH_VENV)/.installed: bench/requirements.txt python/pyproject.toml python/constraints.txt
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_PY) -m pip install -q -r bench/requirements.txt
	$(BENCH_PY) -m pip install -q --no-deps -e python
	touch $@

.PHONY: bench-tools
bench-tools: build $(BENCH_VENV)/.installed
	$(GO) build -o $(BENCH_BIN)/loadgen ./bench/loadgen
	$(GO) build -o $(BENCH_BIN)/awsproxy ./bench/awsproxy
	$(GO) build -o $(BENCH_BIN)/profserve ./bench/profserve

.PHONY: bench
bench: bench-tools
	$(BENCH_PY) bench/run.py
	$(BENCH_PY) bench/memory.py

# The resumed agent's memory in tokens (bench/memory.py): the flat history,
# live_messages and resume_context of four agent workflows, on a service of
# its own on the embedded store. About 20 seconds; offline (the tokenizer's
# data is in its wheel). Part of `make bench`.
.PHONY: bench-memory
bench-memory: build $(BENCH_VENV)/.installed
	$(BENCH_PY) bench/memory.py

.PHONY: bench-quick
bench-quick: bench-tools
	$(BENCH_PY) bench/run.py --quick

# The browser test's tools (e2e/test_ui.py): Debian's Chromium and
# ui-test's pinned npm packages, each installed only when missing.
.PHONY: ui-deps
ui-deps:
	ui-test/setup.sh

# Soak: e2e/test_kill.py at full size, 20 kill -9s under 16 concurrent
# graph runs (and SIGTERM under that load), on the embedded store, then on
# DynamoDB + S3 on the local AWS stack (stopped whether the tests pass or not),
# with e2e/test_scaleout.py at the same size there: three replicas on
# one table and bucket, one of them killed 20 times. `make test` runs the short
# versions (5 kills under 8 runs; 3 under 6 for the replicas). The figures
# (acknowledged / recovered / lost) are printed at the end of each run and kept
# in .cache/reliability/. Then lincheck/'s history checks (see SOAK_LIN), and
# dynamo's TestListNodesLongThread at 10,000 checkpoints (2,500 in make test).
# Most of its time is the history checks' (README gives their load times).
SOAK_KILLS ?= 20
SOAK_RUNS  ?= 16
# And the history checks of lincheck/ at full size: 16 clients, 20 faults of
# each kind, 5,000 operations apart.
SOAK_LIN = SAVER_LIN_CLIENTS=16 SAVER_LIN_FAULTS=$(SOAK_KILLS) SAVER_LIN_OPS=5000

.PHONY: soak
soak: build venv
	$(SOAK_LIN) $(GO) test -count=1 -timeout 0 -v -run 'TestEmbeddedKill' ./lincheck/
	SAVER_BIN=$(abspath $(BIN)) SAVER_KILL_ROUNDS=$(SOAK_KILLS) SAVER_KILL_RUNS=$(SOAK_RUNS) \
		$(E2E) e2e/test_kill.py
	rc=0; localstack/up.sh && { set -a && . ./$(LOCALSTACK_ENV) && set +a && \
		SAVER_BIN=$(abspath $(BIN)) SAVER_STORE=dynamodb SAVER_INIT=true \
		SAVER_TABLE=saver-soak-$$$$ SAVER_BUCKET=saver-soak-$$$$ \
		SAVER_KILL_ROUNDS=$(SOAK_KILLS) SAVER_KILL_RUNS=$(SOAK_RUNS) \
		SAVER_SCALEOUT_KILLS=$(SOAK_KILLS) SAVER_SCALEOUT_RUNS=$(SOAK_RUNS) \
		$(E2E) e2e/test_kill.py e2e/test_scaleout.py && \
		$(SOAK_LIN) $(GO) test -count=1 -timeout 0 -v -tags integration -run 'TestDynamo' ./lincheck/ && \
		SAVER_TREE_CHECKPOINTS=10000 $(GO) test -count=1 -timeout 0 -v -tags integration \
			-run 'TestListNodesLongThread' ./dynamo/; } || rc=$$?; \
	localstack/down.sh; exit $$rc

# Fuzz: every `func Fuzz...` in the repository's tests, one at a time (go test
# runs one fuzz target per package run), FUZZTIME each. A failing input is
# written by go test to the package's testdata/fuzz/<Target>/, the seed corpus
# that plain `go test` runs from then on: commit it with the fix. The target
# lists such new files and fails if any target failed.
# Each target runs under a memory limit: FUZZMEM kilobytes of address space per
# process (ulimit -v), with the Go heap's soft limit at half of it, so that an
# input which makes the code allocate without bound kills its fuzz worker,
# which go test reports as a failure with the input saved, instead of taking
# the machine with it.
FUZZTIME ?= 30s
FUZZMEM  ?= 4194304

.PHONY: fuzz
fuzz:
	@marker=$$(mktemp); fail=0; \
	targets=$$(grep -rn --include='*_test.go' --exclude-dir='.*' --exclude-dir=node_modules \
		'^func Fuzz[A-Za-z0-9_]*(' * | sed -E 's|^(.*)/[^/]*_test\.go:[0-9]+:func (Fuzz[A-Za-z0-9_]*)\(.*|./\1 \2|' | sort -u); \
	test -n "$$targets" || { echo "no fuzz targets found"; exit 1; }; \
	echo "$$targets" | while read -r dir name; do \
		echo "== $$name ($$dir), $(FUZZTIME), $(FUZZMEM) KB"; \
		( ulimit -v $(FUZZMEM) && GOMEMLIMIT=$$(( $(FUZZMEM) / 2 ))KiB \
			exec $(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) "$$dir" ) || echo "$$dir $$name" >>"$$marker.failed"; \
	done; \
	new=$$(find . -path ./.cache -prune -o -path '*/testdata/fuzz/*' -type f -newer "$$marker" -print); \
	if [ -n "$$new" ]; then echo "new failing inputs, now in the seed corpus:"; echo "$$new"; fi; \
	if [ -s "$$marker.failed" ]; then echo "fuzz targets that failed:"; cat "$$marker.failed"; fail=1; fi; \
	rm -f "$$marker" "$$marker.failed"; exit $$fail
