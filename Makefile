# The two commands a newcomer needs: `make demo` and `make test`.
SWIFT ?= swift
WYCHEPROOF ?= ../shared/vectors/wycheproof
CLI := .build/debug/sync-cli

.PHONY: all deps build test demo bench clean

all: build

deps:
	@scripts/install-deps.sh

build: deps
	$(SWIFT) build

## Runs the whole suite, then every test-vector file through `sync-cli vectors verify`.
test: deps
	$(SWIFT) build
	$(SWIFT) test
	$(CLI) vectors verify testvectors/*.json $(wildcard $(WYCHEPROOF)/*.json)

## Shows the engine's main job step by step.
demo: deps
	$(SWIFT) build --product sync-cli
	$(CLI) demo

## Crypto throughput beside the bare libsodium floor (release build).
bench: deps
	$(SWIFT) run -c release sync-bench

clean:
	rm -rf .build
