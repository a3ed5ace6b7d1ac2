# The two commands a newcomer needs: `make demo` and `make test`.
SWIFT ?= swift
WYCHEPROOF ?= ../shared/vectors/wycheproof
CLI := .build/debug/sync-cli

.PHONY: all deps build test demo bench stack stack-stop clean

all: build

deps:
	@scripts/install-deps.sh

build: deps
	$(SWIFT) build

## Starts a private PostgreSQL + PostgREST-compatible stack, runs the whole suite against it,
## stops the stack (by pid, even when tests fail), then runs every vector file through
## `sync-cli vectors verify`.
test: deps
	$(SWIFT) build
	scripts/with-stack.sh $(SWIFT) test
	$(CLI) vectors verify testvectors/*.json $(wildcard $(WYCHEPROOF)/*.json)

## Shows the engine's main job step by step.
demo: deps
	$(SWIFT) build --product sync-cli
	$(CLI) demo

## Crypto throughput beside the bare libsodium floor (release build).
bench: deps
	$(SWIFT) run -c release sync-bench

## The same stack in the background, for trying the engine against PostgREST by hand.
stack: deps
	$(SWIFT) build --product postgrest-server
	scripts/stack.sh start
	@scripts/stack.sh info

stack-stop:
	scripts/stack.sh stop

clean:
	rm -rf .build
