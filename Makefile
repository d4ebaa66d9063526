# Two commands on a fresh machine with Node 20 and npm: `make run` and `make test`.
NPM ?= npm
STAMP := node_modules/.installed-stamp

.PHONY: run test test-unit build bench soak install clean issuer manifests screenshots

run: build
	node dist/src/cli/main.js serve

test: build
	node dist/test/run-tests.js

# The fast lane: every test that needs no database, no child process and no network (not test/integration/).
test-unit: build
	node dist/test/run-tests.js --lane=unit

# Renders what is generated in deploy/ (the PrometheusRule, from deploy/observability/prometheus-rules.yaml).
manifests: build
	node dist/test/deploy/prometheus-rule.js

# The organisation's provider for the admin API on 127.0.0.1:$${ADMIN_ISSUER_PORT:-9471}, with its test people (docs/admin-api.md, "Admin API").
.PHONY: admin-issuer
admin-issuer: build
	node dist/test/support/local-admin-issuer.js

# `sitekey-authz issuer`, the partner API's authorization server, on 127.0.0.1:$${ISSUER_PORT:-9470} with the
# embedded database, for trying tokens (docs/tokens.md, "Trying it on your machine").
issuer: build
	node dist/src/cli/main.js issuer

# The admin console's main pages as PNGs in docs/console/ (docs/console.md, "Admin console"), taken with Debian's chromium.
screenshots: build
	node dist/test/support/console-screenshots.js

# Benchmarks (docs/development.md, "Benchmarks"): both install h2load (Debian's nghttp2-client) when missing and they can.
# BENCH_SECONDS, BENCH_ROUNDS, BENCH_INSTANCES, SOAK_SECONDS and SOAK_RATE shorten or fix them; each writes a section of bench/RESULTS.md.
# Both run on the Node the image runs (the Dockerfile's), fetched once into ~/.cache/sitekey-authz; BENCH_NODE=/path/to/node overrides.
bench: build
	node dist/bench/image-node.js run-benchmarks.js

soak: build
	node dist/bench/image-node.js soak.js

# The TypeScript build runs only when a source, the compiler settings or the dependencies changed
# since the last one (it takes seconds that every `make run` would pay).
BUILT := dist/.built
SOURCES := $(shell find src test bench -name '*.ts' 2>/dev/null) tsconfig.json

build: $(BUILT)

$(BUILT): $(SOURCES) $(STAMP)
	npx --no-install tsc -p .
	@# tsc writes files without the execute bit; npx runs the package's bin directly.
	chmod +x dist/src/cli/main.js
	@touch $@

install: $(STAMP)

# npm ci gives the exact locked tree; the stamp keeps repeat runs from reinstalling.
$(STAMP): package.json package-lock.json
	$(NPM) ci --no-audit --no-fund
	@touch $@

clean:
	rm -rf dist node_modules
