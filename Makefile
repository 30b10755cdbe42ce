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

.PHONY: test
test: test-go test-py test-aws

.PHONY: test-go
test-go:
	$(GO) test -race -count=1 ./...

.PHONY: test-py
test-py: build venv ui-deps
	SAVER_BIN=$(abspath $(BIN)) $(PY) -m pytest -q python/tests

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

# The production stores on the local AWS stack: the Go integration tests, then
# the whole Python suite (conformance, graphs, restart) against a service on
# the dynamodb store. The stack is stopped whether the tests pass or not.
.PHONY: test-aws
test-aws: build venv ui-deps
	rc=0; localstack/up.sh && { set -a && . ./$(LOCALSTACK_ENV) && set +a && \
		$(GO) test -race -count=1 -tags integration ./dynamo/... ./s3offload/... ./localstack/... && \
		SAVER_BIN=$(abspath $(BIN)) SAVER_STORE=dynamodb SAVER_INIT=true \
		SAVER_TABLE=saver-pytest-$$$$ SAVER_BUCKET=saver-pytest-$$$$ \
		$(PY) -m pytest -q python/tests; } || rc=$$?; \
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

$(BENCH_VENV)/.installed: bench/requirements.txt python/pyproject.toml
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_PY) -m pip install -q -r bench/requirements.txt
	$(BENCH_PY) -m pip install -q --no-deps -e python
	touch $@

.PHONY: bench-tools
bench-tools: build $(BENCH_VENV)/.installed
	$(GO) build -o $(BENCH_BIN)/loadgen ./bench/loadgen
	$(GO) build -o $(BENCH_BIN)/awsproxy ./bench/awsproxy

.PHONY: bench
bench: bench-tools
	$(BENCH_PY) bench/run.py

.PHONY: bench-quick
bench-quick: bench-tools
	$(BENCH_PY) bench/run.py --quick

# The browser test's tools (python/tests/test_ui.py): Debian's Chromium and
# ui-test's pinned npm packages, each installed only when missing.
.PHONY: ui-deps
ui-deps:
	ui-test/setup.sh
