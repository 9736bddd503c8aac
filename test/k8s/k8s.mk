# Kubernetes: container images and the kind cluster (included by the top-level Makefile).
# Versions: test/k8s/versions.env. Caches: ~/.cache/eventdb-k8s (EVENTDB_K8S_CACHE). README: "Kubernetes".
K8S_DIR := test/k8s

.PHONY: images k8s-build k8s-node-image k8s-up k8s-down k8s-status k8s-check test-k8s

images: ## build eventdb:dev and eventdb-operator:dev (Docker or podman; offline base where no registry answers) and load them into the cluster
	$(K8S_DIR)/images.sh

k8s-build: ## build every Kubernetes program the cluster needs from Go modules into ~/.cache/eventdb-k8s (first time only)
	$(K8S_DIR)/build.sh

k8s-node-image: ## assemble the kind node image offline (when kindest/node cannot be pulled; cached by version)
	$(K8S_DIR)/host-setup.sh >/dev/null
	$(K8S_DIR)/node-image.sh

k8s-up: ## create this checkout's kind cluster (kind + Docker or rootful podman) with eventdb:dev and eventdb-operator:dev loaded; writes .local/k8s/kubeconfig
	$(K8S_DIR)/cluster.sh up
	EVENTDB_K8S_LOAD=1 $(K8S_DIR)/images.sh
	@echo "export KUBECONFIG=$(CURDIR)/.local/k8s/kubeconfig PATH=$(CURDIR)/.local/k8s/bin:\$$PATH"

k8s-down: ## delete the cluster and every trace on the host (IMAGES=1: also the images made); idempotent
	$(K8S_DIR)/cluster.sh down $(if $(IMAGES),--images)

k8s-status: ## show the cluster's nodes
	$(K8S_DIR)/cluster.sh status

k8s-check: ## check that no cluster of this checkout left anything on the host
	$(K8S_DIR)/check-clean.sh

test-k8s: build ## Kubernetes tests (and the cluster tools' Go tests): on this checkout's kind cluster (made and deleted for the run), or the cluster in $KUBECONFIG
	npx vitest run --config test/vitest.config.ts --project k8s
