# The operator's make targets (included by the top-level Makefile).
.PHONY: crds

crds: build ## regenerate crds/*.yaml from the operator's zod API (operator/src/api)
	node dist/operator/src/crd-gen/write-crds.js

.PHONY: manifests
manifests: crds ## render the plain-YAML install (operator/deploy/, install.yaml) from the Helm chart
	operator/scripts/render-manifests.sh
