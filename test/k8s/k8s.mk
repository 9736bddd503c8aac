# Local Kubernetes control plane (included by the top-level Makefile). Versions: test/k8s/versions.env.
K8S_DIR := test/k8s
HAVE_GO := $(shell command -v go >/dev/null 2>&1 && echo yes)

.PHONY: k8s-build k8s-up k8s-down k8s-status test-k8s

k8s-build: ## build the pinned control-plane binaries into ~/.cache/eventdb-k8s (first time only)
	$(K8S_DIR)/build.sh

k8s-up: build ## start etcd, kube-apiserver, controller-manager, scheduler and the local kubelet; writes .local/k8s/kubeconfig
	$(K8S_DIR)/cluster.sh up
	@echo "export KUBECONFIG=$(CURDIR)/.local/k8s/kubeconfig PATH=$(CURDIR)/.local/k8s/bin:\$$PATH"

k8s-down: ## stop the local control plane and its pods, remove .local/k8s
	$(K8S_DIR)/cluster.sh down

k8s-status: ## show which control-plane processes run
	$(K8S_DIR)/cluster.sh status

test-k8s: build ## Kubernetes tests (local control plane, or the cluster in $KUBECONFIG)
	npx vitest run --config test/vitest.config.ts --project k8s
