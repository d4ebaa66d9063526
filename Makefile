# Two commands on a fresh machine with Node 20 and npm: `make run` and `make test`.
NPM ?= npm
STAMP := node_modules/.installed-stamp

.PHONY: run test build bench install clean

run: build
	node dist/src/cli/main.js serve

test: build
	node dist/test/run-tests.js

bench: build
	node dist/bench/run-benchmarks.js

build: $(STAMP)
	npx --no-install tsc -p .
	@# tsc writes files without the execute bit; npx runs the package's bin directly.
	chmod +x dist/src/cli/main.js

install: $(STAMP)

# npm ci gives the exact locked tree; the stamp keeps repeat runs from reinstalling.
$(STAMP): package.json package-lock.json
	$(NPM) ci --no-audit --no-fund
	@touch $@

clean:
	rm -rf dist node_modules
