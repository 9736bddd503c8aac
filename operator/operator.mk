# The operator's make targets (included by the top-level Makefile).
.PHONY: crds

crds: build ## regenerate crds/*.yaml from the operator's zod API (operator/src/api)
	node dist/operator/src/crd-gen/write-crds.js

.PHONY: manifests
manifests: crds ## render the plain-YAML install (operator/deploy/, operator/install.yaml) from the Helm chart
	operator/scripts/render-manifests.sh

.PHONY: run run-stop
run: build ## local kind cluster (or $KUBECONFIG), images, the operator chart and a 3-node EventDBCluster; waits Ready, prints how to reach it
	operator/scripts/run.sh

run-stop: ## delete what make run made (the demo cluster with its data, the operator); the kind cluster stays
	operator/scripts/run.sh stop

#: PREFIX   the PATH directory `make plugin` links kubectl-eventdb into (default /usr/local/bin)
PREFIX ?= /usr/local/bin
.PHONY: plugin plugin-uninstall plugin-dist
plugin: deps ## install the kubectl plugin: compiles, then links $(PREFIX)/kubectl-eventdb to operator/bin/kubectl-eventdb (`kubectl eventdb --help`)
	npx tsc -p tsconfig.json
	@mkdir -p "$(PREFIX)"
	ln -sfn "$(CURDIR)/operator/bin/kubectl-eventdb" "$(PREFIX)/kubectl-eventdb"
	@echo "kubectl-eventdb linked into $(PREFIX); try: kubectl eventdb --help"

plugin-uninstall: ## remove the link `make plugin` made
	rm -f "$(PREFIX)/kubectl-eventdb"

#: PLUGIN_RELEASE_URL   where a release uploads the plugin archive; the krew manifest's uri (default: the local file)
plugin-dist: deps ## the kubectl plugin's release archive and its krew manifest with uri and sha256 filled in, in .local/plugin-dist/
	PLUGIN_RELEASE_URL="$(PLUGIN_RELEASE_URL)" operator/plugin/dist.sh
