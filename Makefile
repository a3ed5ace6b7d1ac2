# The two commands a newcomer needs: `make demo` and `make test`.
SWIFT ?= swift
# The test rig (the stack's server, benchmarks, fuzz targets, vector generator) is in the
# package graph only with this set (Package.swift); the product builds without it.
RIG := SESSION_SYNC_RIG=1
# The folder of shared conformance data beside a checkout, when there is one: its copies are
# verified too whenever they differ from the vendored ones in testvectors/third_party/.
SHARED_VECTORS ?= ../shared/vectors
CLI := .build/debug/sync-cli
# The suites run a second time on the swift-crypto backend (the one an iOS app links).
SWIFT_CRYPTO_SUITES := SecretCryptoTests|DeviceTrustTests|ConformanceVectorsTests|PostLoginSyncTests\.(Approval(?!Alert)|EnvelopeV2|FirstDayTrust|Recovery|Trust)
# Left out of that second pass: the trust log's reserve (9,000 entries written and verified to
# count seats, no primitive the first pass does not already compare across backends). On the
# swift-crypto backend its BoringSSL is a debug build, and this one test took 111 s of the pass.
SWIFT_CRYPTO_SKIP := TrustLogVerifierTests/reserve\(\)
# An import of a module the target does not declare fails the build.
BUILD_FLAGS := --explicit-target-dependency-import-check error

.PHONY: all deps build test lint docs demo install app-check soak bench bench-push bench-sanitiser push-worker fuzz stack stack-stop vectors schema clean

all: build

deps:
	@scripts/install-deps.sh

build: deps
	$(SWIFT) build $(BUILD_FLAGS)

## Starts a private PostgreSQL + PostgREST-compatible stack, runs the whole suite against it,
## stops the stack (by pid, even when tests fail); runs the crypto, envelope, trust, approval
## and recovery suites again on the swift-crypto backend (on the embedded remote: the backend is
## the client's, and the remote only stores its bytes); runs every vector file through
## `sync-cli vectors verify` on both backends; checks that no library reaches a C library on
## Apple platforms, that each article's snippet is the compiled code, and that every version tag
## names the commit that set its version; runs the README's commands; installs the debug build
## into a temporary prefix and checks what it put there. With the rig on, a warning fails the
## build. Every step after the first build uses it as it is: a build with other settings (the
## rig off, another product set) recompiles modules the next run then compiles back. The stack's
## server is a release build (the one `make bench` uses): built for debug, it spent about a third
## of the suite's CPU time.
test: deps
	$(RIG) $(SWIFT) build $(BUILD_FLAGS) --build-tests
	$(RIG) $(SWIFT) build -c release --product postgrest-server
	$(RIG) STACK_SERVER=$(CURDIR)/.build/release/postgrest-server scripts/with-stack.sh \
	  scripts/schema.sh check -- $(SWIFT) test $(BUILD_FLAGS) --skip-build
	$(RIG) SESSION_SYNC_CRYPTO_BACKEND=swift-crypto SYNC_SKIP_STACK_TESTS=1 $(SWIFT) test $(BUILD_FLAGS) --skip-build \
	  --filter '$(SWIFT_CRYPTO_SUITES)' --skip '$(SWIFT_CRYPTO_SKIP)'
	$(CLI) vectors verify testvectors/*.json testvectors/third_party/*/*.json $$(scripts/changed-shared-vectors.sh $(SHARED_VECTORS))
	$(CLI) vectors verify --backend swift-crypto testvectors/*.json testvectors/third_party/*/*.json
	scripts/check-app-graph.sh
	scripts/check-snippets.sh
	scripts/tag-versions.sh --check
	$(RIG) scripts/check-readme.sh
	$(RIG) scripts/check-install.sh debug

## The soak tier (docs/testing.md): the kill rounds (200 on the embedded remote, 50 on the stack)
## and the fault-proxy rounds (200) at their full counts, each with a fresh seed, printed;
## SESSION_SYNC_SOAK_SEED=N replays one. `make test` runs the same tests at 30, 10 and 60 rounds
## with fixed seeds.
soak: deps
	$(RIG) $(SWIFT) build $(BUILD_FLAGS) --build-tests
	$(RIG) SESSION_SYNC_SOAK=1 scripts/with-stack.sh $(SWIFT) test $(BUILD_FLAGS) --skip-build --filter 'CrashRoundsTests|FaultInjectionTests'

## Builds Examples/AppPackage, an app's package depending on this one by path, with libsodium left
## out of the build as on iOS (the swift-crypto backend alone), and runs the code of the DocC
## article "Pull and open secrets in an iOS app" in it (scripts/app-check.sh).
app-check: deps
	scripts/app-check.sh

## Checks the formatting (.swift-format: 120 columns and the rules kept green); CI runs it.
## `swift format -i -r Sources Backend Rig Tests Package.swift` applies it.
lint:
	$(SWIFT) format lint --strict -r Sources Backend Rig Tests Package.swift

## Installs sync-cli (release build) under PREFIX: the binary, completions for bash, zsh and
## fish, the man page, a systemd user unit and a launchd agent for `sync --watch` (docs/agent.md).
## CONFIGURATION=debug installs the debug build instead (`make test` checks the layout with the
## binary its suite ran; `.ci/run` checks the release install).
PREFIX ?= /usr/local
CONFIGURATION ?= release
install: deps
	$(SWIFT) build -c $(CONFIGURATION) --product sync-cli
	$(SWIFT) package generate-manual --configuration $(CONFIGURATION) >/dev/null
	@prefix=$$(eval echo "$(PREFIX)"); set -e; \
	install -d "$$prefix/bin" "$$prefix/share/man/man1" "$$prefix/share/bash-completion/completions" \
	  "$$prefix/share/zsh/site-functions" "$$prefix/share/fish/vendor_completions.d" \
	  "$$prefix/share/systemd/user" "$$prefix/share/session-sync/launchd"; \
	install -m 0755 .build/$(CONFIGURATION)/sync-cli "$$prefix/bin/sync-cli"; \
	.build/$(CONFIGURATION)/sync-cli --generate-completion-script bash >"$$prefix/share/bash-completion/completions/sync-cli"; \
	.build/$(CONFIGURATION)/sync-cli --generate-completion-script zsh >"$$prefix/share/zsh/site-functions/_sync-cli"; \
	.build/$(CONFIGURATION)/sync-cli --generate-completion-script fish >"$$prefix/share/fish/vendor_completions.d/sync-cli.fish"; \
	install -m 0644 .build/plugins/GenerateManual/outputs/sync-cli/sync-cli.1 "$$prefix/share/man/man1/sync-cli.1"; \
	sed "s|@BINDIR@|$$prefix/bin|" dist/systemd/session-sync.service >"$$prefix/share/systemd/user/session-sync.service"; \
	sed "s|@BINDIR@|$$prefix/bin|" dist/launchd/com.example.session-sync.plist \
	  >"$$prefix/share/session-sync/launchd/com.example.session-sync.plist"; \
	echo "installed sync-cli $$("$$prefix/bin/sync-cli" --version) under $$prefix"

## The DocC documentation of every library module an app uses (swift-docc-plugin), with the
## articles of PostLoginSync.docc; any warning fails it. CI runs it. Archives go to
## .build/plugins/Swift-DocC/outputs/.
DOC_TARGETS := PostLoginSync LocalStore RemoteContract RemoteRules RemoteStore EmbeddedRemote RemoteSelection SecretCrypto DeviceTrust SyncModel AgentHooks
docs: deps
	SESSION_SYNC_DOCS=1 $(SWIFT) package generate-documentation --warnings-as-errors $(foreach t,$(DOC_TARGETS),--target $(t))

## Shows the engine's main job step by step.
demo: deps
	$(SWIFT) build --product sync-cli
	$(CLI) demo

## The benchmarks (release build): crypto beside the libsodium floor, the local store, and push
## and pull at sizes S, M, L on the embedded remote and on a private PostgreSQL stack (release
## server), beside the per-row baseline and the floor; then the first push with every device on
## v2 beside v1, and the real `sync-cli sync` process from exec to exit with its peak RSS.
## Figures and targets are printed; JSON goes to .build/sync-bench.json.
bench: deps
	$(RIG) $(SWIFT) build -c release --product sync-bench
	$(RIG) $(SWIFT) build -c release --product sync-cli
	$(RIG) $(SWIFT) build -c release --product postgrest-server
	$(RIG) STACK_SERVER=$(CURDIR)/.build/release/postgrest-server scripts/with-stack.sh sh -c \
	  '.build/release/sync-bench && .build/release/sync-bench versions && .build/release/sync-bench coldstart'

## The push worker's figures (release build) beside h2load against the same APNs imitation, in
## the same run, on a private stack: sender alone, end to end from PostgreSQL, LISTEN latency,
## kill -9, SIGTERM, idle memory. JSON goes to .build/push-bench.json (docs/push-worker.md).
bench-push: deps
	@scripts/install-bench-tools.sh
	$(RIG) $(SWIFT) build -c release --product push-bench
	$(RIG) $(SWIFT) build -c release --product push-worker
	$(RIG) $(SWIFT) build --product postgrest-server
	$(RIG) scripts/with-stack.sh .build/release/push-bench

## The lock-screen sanitiser's time on 100,000 scalars (release build; docs/benchmarks.md).
bench-sanitiser: deps
	$(RIG) $(SWIFT) build -c release --product sync-vectors
	.build/release/sync-vectors bench

## The push worker, the backend service that delivers push_outbox to APNs (docs/push-worker.md).
push-worker: deps
	SESSION_SYNC_BACKEND=1 $(SWIFT) build -c release --product push-worker
	@echo "built .build/release/push-worker"

## Fuzzing (libFuzzer, address sanitizer): every target SECONDS seconds from the committed seeds
## in fuzz/corpus/; prints executions, coverage and crashes per target (scripts/fuzz.sh).
SECONDS ?= 60
fuzz: deps
	$(RIG) scripts/fuzz.sh $(SECONDS)

## The same stack in the background, for trying the engine against PostgREST by hand. With
## STACK_PUSH=1, an APNs imitation and the push worker run beside it (docs/push-worker.md).
stack: deps
	$(RIG) $(SWIFT) build --product postgrest-server
	@if [ "$${STACK_PUSH:-}" = 1 ]; then $(RIG) $(SWIFT) build --product push-worker && $(RIG) $(SWIFT) build --product apns-imitation; fi
	$(RIG) scripts/stack.sh start
	@scripts/stack.sh info

stack-stop:
	scripts/stack.sh stop

## Writes supabase/schema.sql again: the migrated schema in one file (pg_dump of a private
## stack's database, normalised). `make test` fails while it is stale.
schema: deps
	$(RIG) $(SWIFT) build --product postgrest-server
	$(RIG) scripts/with-stack.sh scripts/schema.sh write

## Writes the project's vector files again (reproducible: the same bytes on every machine), and
## the fuzz seeds made from them.
vectors: deps
	$(RIG) $(SWIFT) build --product sync-vectors
	.build/debug/sync-vectors generate -o testvectors/session-secret-v1.json
	.build/debug/sync-vectors generate --version 2 -o testvectors/session-secret-v2.json
	.build/debug/sync-vectors generate --kind certificate -o testvectors/device-certificate-v1.json
	.build/debug/sync-vectors generate --kind approval -o testvectors/approval-v1.json
	.build/debug/sync-vectors generate --kind question -o testvectors/question-v1.json
	.build/debug/sync-vectors generate --kind lockscreen -o testvectors/lockscreen-sanitiser-v2.json
	.build/debug/sync-vectors generate --kind backup -o testvectors/identity-backup-v1.json
	.build/debug/sync-vectors generate --kind pairing -o testvectors/pairing-v1.json
	.build/debug/sync-vectors generate --kind trustlog -o testvectors/trust-log-v1.json
	.build/debug/sync-vectors generate --kind choices -o testvectors/question-choices-v1.json
	.build/debug/sync-vectors generate --kind agentsession -o testvectors/agent-session-v1.json
	.build/debug/sync-vectors generate --kind remoterules -o testvectors/remote-rules-v1.json
	$(RIG) $(SWIFT) build --product sync-fuzz
	.build/debug/sync-fuzz seed testvectors fuzz/corpus

clean:
	rm -rf .build
