# The operator's make targets (included by the top-level Makefile).
.PHONY: crds

crds: build ## regenerate crds/*.yaml from the operator's zod API (operator/src/api)
	node dist/operator/src/crd-gen/write-crds.js crds
