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
test: test-go test-py

.PHONY: test-go
test-go:
	$(GO) test -race -count=1 ./...

.PHONY: test-py
test-py: build venv
	SAVER_BIN=$(abspath $(BIN)) $(PY) -m pytest -q python/tests

.PHONY: lint
lint:
	test -z "$$(gofmt -l .)"
	$(GO) vet ./...
