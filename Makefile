# Operator shortcuts over build/bin/voxosctl (scripts/run, scripts/test and
# scripts/build stay the way to set up, build and test).
#
#   make example-skills-list
#   make example-skills-load USER_ID=<local-voxos-user-id> MCP=<key> [DRY_RUN=1]
#
# USER_ID is the owner's id; in this node a tenant is one owner's account, so
# it is the tenant id (`voxosctl tenants list`). MCP is a key of
# examples/skills/catalog.json (see `make example-skills-list`).
# VOXOSCTL_FLAGS passes node options, e.g. VOXOSCTL_FLAGS="--url http://127.0.0.1:7100".

VOXOSCTL ?= build/bin/voxosctl
VOXOSCTL_FLAGS ?=
CATALOG ?= examples/skills

.PHONY: example-skills-list example-skills-load

# Built once when missing; scripts/build rebuilds it after changes.
build/bin/voxosctl:
	scripts/build voxosctl

example-skills-list: $(VOXOSCTL)
	$(VOXOSCTL) $(VOXOSCTL_FLAGS) skills list --catalog $(CATALOG)

example-skills-load: $(VOXOSCTL)
	$(if $(USER_ID),,$(error USER_ID is required: make example-skills-load USER_ID=<local-voxos-user-id> MCP=<key> [DRY_RUN=1]))
	$(if $(MCP),,$(error MCP is required: make example-skills-load USER_ID=<local-voxos-user-id> MCP=<key> [DRY_RUN=1]; keys: make example-skills-list))
	$(if $(filter-out 0 1,$(DRY_RUN)),$(error DRY_RUN must be 1, 0 or empty))
	$(VOXOSCTL) $(VOXOSCTL_FLAGS) skills load --user-id '$(USER_ID)' --mcp '$(MCP)' --catalog $(CATALOG) $(if $(filter 1,$(DRY_RUN)),--dry-run)
