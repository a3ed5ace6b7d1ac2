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

## The benchmarks (release build): crypto beside the libsodium floor, the local store, and push
## and pull at sizes S, M, L on the embedded remote and on a private PostgreSQL stack (release
## server), beside the per-row baseline and the floor. Figures are printed; JSON goes to
## .build/sync-bench.json.
bench: deps
	$(SWIFT) build -c release --product sync-bench
	$(SWIFT) build -c release --product postgrest-server
	STACK_SERVER=$(CURDIR)/.build/release/postgrest-server scripts/with-stack.sh .build/release/sync-bench

## The same stack in the background, for trying the engine against PostgREST by hand.
stack: deps
	$(SWIFT) build --product postgrest-server
	scripts/stack.sh start
	@scripts/stack.sh info

stack-stop:
	scripts/stack.sh stop

clean:
	rm -rf .build
