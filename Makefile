# The README's two commands:
#   make demo   local host + member clusters with clusterlet between them, and a sample workload
#   make test   typecheck, lint, unit tests, integration tests on the local clusters, the e2e suite on real nodes
# Both set up what they need: Node 24 (from the npm registry when PATH has an older one), npm
# dependencies, and the Kubernetes/etcd/KWOK binaries and helm (built once per machine into ~/.cache/clusterlet).
SHELL := /bin/bash
NODE_BIN := $(shell bash hack/ensure-node.sh | tail -n 1)
ifeq ($(NODE_BIN),)
$(error could not find or install Node.js 24 (hack/ensure-node.sh failed; its messages are above))
endif
export PATH := $(NODE_BIN):$(PATH)

.PHONY: all deps binaries build typecheck lint test test-unit test-integration demo bench e2e e2e-local realnode-deps image clean

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

# typescript-eslint's type-aware rules (eslint.config.js): floating and misused promises, non-exhaustive switches.
lint: deps
	npx eslint

test-unit: deps
	node --test --test-reporter=spec 'test/unit/**/*.test.ts'

test-integration: deps binaries
	node --test-reporter=spec test/integration/run.ts

# binaries first: the unit tests check manifests/ and charts/ with the kubectl and helm built there.
test: typecheck lint binaries test-unit test-integration e2e-local

demo: deps binaries
	node hack/demo.ts

bench: build binaries
	node bench/run.ts

# The end-to-end suite on two kind clusters (needs docker, kind and kubectl): clusters, image, manifests/,
# e2e/e2e.test.ts, and the clusters deleted on exit. Against clusters of your own: npm run e2e (see e2e/e2e.test.ts).
e2e:
	bash e2e/kind/run-all.sh

realnode-deps:
	@bash hack/ensure-realnode-deps.sh

# The same suite on real nodes of this machine, no Docker engine nor kind: local host and member clusters, each
# with a real node (containerd, kubelet, kube-proxy), the images built with buildah, clusterlet installed with its
# Helm chart (e2e/local/run.ts). Needs root; installs the Debian packages it needs.
e2e-local: deps binaries realnode-deps
	node e2e/local/run.ts

# Container images without a Docker engine or a registry (buildah, hack/build-images.sh): clusterlet's (the
# Dockerfile) to dist/clusterlet-image.tar; it and the pause and busybox images (localhost/clusterlet-test/pause:3.10
# and localhost/clusterlet-test/busybox:1.36, names of our own) are docker archives in the directory printed, for
# `ctr -n k8s.io images import`, `docker load` or `kind load image-archive`. IMAGE_TAG=dev by default.
image:
	@dir=$$(bash hack/build-images.sh | tail -n 1) && [ -s "$$dir/clusterlet.tar" ] && mkdir -p dist && \
	  { ln -f "$$dir/clusterlet.tar" dist/clusterlet-image.tar 2>/dev/null || cp -f "$$dir/clusterlet.tar" dist/clusterlet-image.tar; } && \
	  echo "dist/clusterlet-image.tar: docker.io/library/clusterlet:$${IMAGE_TAG:-dev}" && \
	  echo "$$dir: clusterlet.tar pause.tar busybox.tar"

clean:
	rm -rf dist node_modules
