# The README's two commands:
#   make demo   local host + member clusters with clusterlet between them, and a sample workload
#   make test   typecheck, unit tests, integration tests on the local clusters
# Both set up what they need: Node 24 (from the npm registry when PATH has an older one), npm
# dependencies, and the Kubernetes/etcd/KWOK binaries and helm (built once per machine into ~/.cache/clusterlet).
SHELL := /bin/bash
NODE_BIN := $(shell bash hack/ensure-node.sh | tail -n 1)
ifeq ($(NODE_BIN),)
$(error could not find or install Node.js 24 (hack/ensure-node.sh failed; its messages are above))
endif
export PATH := $(NODE_BIN):$(PATH)

.PHONY: all deps binaries build typecheck test test-unit test-integration demo bench e2e clean

all: build

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

deps: node_modules/.installed

binaries:
	@bash hack/build-k8s.sh >/dev/null
	@bash hack/build-helm.sh >/dev/null

build: deps
	npm run build

typecheck: deps
	npx tsc -p tsconfig.json --noEmit

test-unit: deps
	node --test --test-reporter=spec 'test/unit/**/*.test.ts'

test-integration: deps binaries
	node --test-reporter=spec test/integration/run.ts

# binaries first: the unit tests check manifests/ and charts/ with the kubectl and helm built there.
test: typecheck binaries test-unit test-integration

demo: deps binaries
	node hack/demo.ts

bench: build binaries
	node bench/run.ts

# The end-to-end suite on two kind clusters (needs docker, kind and kubectl): clusters, image, manifests/,
# e2e/e2e.test.ts, and the clusters deleted on exit. Against clusters of your own: npm run e2e (see e2e/e2e.test.ts).
e2e:
	bash e2e/kind/run-all.sh

clean:
	rm -rf dist node_modules
