# kueue-graphql: the two commands a newcomer needs are `make demo` and `make test`.
SHELL := /bin/bash
.DEFAULT_GOAL := help

UV_VERSION ?= 0.13.8
# uv on PATH, else the one `make install` puts into this Python with pip.
UV ?= $(shell command -v uv 2>/dev/null || echo python3 -m uv)
RUN := $(UV) run --frozen
# Use the machine's Python 3.11; never download an interpreter (only package registries are reachable).
export UV_PYTHON_DOWNLOADS := never
# The test control plane runs the JobSet controller (and Kueue's Pod-based integrations) and has
# KubeRay's CRDs with Kueue managing RayJobs and RayClusters (the KubeRay operator is not built:
# Kueue alone admits them) unless told otherwise: the owner scenarios beyond batch Jobs are then
# part of `make test`. Measured: JobSet no slower start (44-55 s vs 46 s to ready, under load),
# +130 MiB RSS, a cold JobSet build of ~14 min (cached after); KubeRay's CRDs +11 s to ready and
# +340 MiB RSS (kube-apiserver), no build. KGQL_INTEGRATIONS=none make test for the
# batch/Job-only control plane.
export KGQL_INTEGRATIONS ?= jobset,kuberay
# MultiKueue (issue 25), opt-in until the service reads workers: KGQL_MULTIKUEUE=1 make cluster-up
# also starts two worker control planes (.cluster/worker-1, worker-2: the same binaries, each its own
# etcd, kube-apiserver, controller-manager, scheduler and Kueue) and the manager's MultiKueue objects
# and scenarios; tests/cluster/test_multikueue.py runs only then. Measured: +41-49 s to ready, +1.6 GiB
# RSS, +4 % of a core at idle (tests/cluster/README.md, "MultiKueue workers").
export KGQL_MULTIKUEUE ?= 0

.PHONY: help install lint types contracts unit test cluster-build cluster-up cluster-down cluster-status demo graphiql-assets map-assets map-screenshots schema bench bench-reads bench-cpu bench-scale bench-bomb bench-units bench-subs bench-cli bench-live image wheel clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-15s %s\n", $$1, $$2}'

install: ## create .venv with the locked dependencies (uv.lock), and fetch GraphiQL's and the admission map's files (npm)
	@$(UV) --version >/dev/null 2>&1 || python3 -m pip install --quiet "uv==$(UV_VERSION)"
	$(UV) sync --frozen
	$(RUN) python scripts/fetch_graphiql_assets.py
	$(RUN) python scripts/fetch_map_assets.py

lint: install ## ruff lint and format check
	$(RUN) ruff check .
	$(RUN) ruff format --check .

types: install ## mypy (strict) on the package
	$(RUN) mypy

contracts: install ## import-linter: layers flow one way
	$(RUN) lint-imports

test: lint types contracts cluster-build ## lint, types, layer contract, then every test (starts the control plane; npm ci of tests/node on first use)
	$(RUN) pytest

cluster-build: install ## build (or find cached) the control-plane and Kueue binaries
	$(RUN) python -m tests.cluster build

cluster-up: install ## start kube-apiserver, controllers, scheduler, Kueue; apply scenarios (KGQL_MULTIKUEUE=1: + 2 MultiKueue workers)
	$(RUN) python -m tests.cluster up

cluster-down: install ## stop every control-plane process (MultiKueue workers too) and remove .cluster/
	$(RUN) python -m tests.cluster down

cluster-status: install ## is the control plane up? (and each MultiKueue worker, with its RSS)
	$(RUN) python -m tests.cluster status

demo: install ## control plane + scenarios + the server + GraphiQL, with a ready token and query
	$(RUN) python -m tests.cluster.demo

map-assets: install ## fetch the admission map's layout library (cytoscape, cytoscape-dagre) with npm ci (web/admission-map/package-lock.json, sha256-checked) into kueue_graphql/http/admission_map_vendor, for the wheel

map-screenshots: cluster-build ## screenshots of the admission map for the six seed cases into docs/admission-map/ (Chromium; starts the control plane)
	ADMISSION_MAP_SCREENSHOTS=docs/admission-map $(RUN) pytest tests/service/test_admission_map.py -q -k seed_case

graphiql-assets: install ## fetch GraphiQL's JS/CSS with npm pack (sha256-checked) into kueue_graphql/http/graphiql_assets, for the wheel
	$(RUN) python scripts/fetch_graphiql_assets.py

bench: install ## admission path in both read modes vs an ideal raw client: latency, API calls, throughput, CPU, RSS (control plane up)
	$(RUN) python benchmarks/admission_path.py $(BENCH_ARGS)

bench-reads: install ## control-plane CPU per read the cache-mode admission path makes as the caller, quorum vs resourceVersion=0 (control plane up)
	$(RUN) python benchmarks/caller_reads.py $(BENCH_ARGS)

bench-cpu: install ## impersonate-mode server CPU per warm admission-path request vs BASELINE_REF (default f28c6d6), same run (control plane up)
	$(RUN) python benchmarks/cpu_vs_baseline.py --baseline-ref $(or $(BASELINE_REF),f28c6d6) $(BENCH_ARGS)

bench-scale: install ## list queries and queue positions (diagnose, aheadOfMe) at 1k and 10k pending Workloads: latency, bytes read, CPU, RSS (control plane up)
	$(RUN) nice python benchmarks/scale.py $(BENCH_ARGS)

bench-subs: install ## 200 live subscriptions: change->push p50/p95, memory/sub, CPU/push, fds/tasks/RSS after close (control plane up)
	$(RUN) nice python benchmarks/subscriptions.py --subscriptions 200 $(BENCH_ARGS)

bench-live: install ## N diagnosis subscriptions under unrelated/related Workload changes: CPU idle and per change, change->push p50/p95, bytes, RSS (control plane up)
	$(RUN) nice python benchmarks/live.py $(BENCH_ARGS)

bench-bomb: install ## query bombs: server CPU per refusal, apiCalls, /healthz delay (control plane must be up)
	$(RUN) python benchmarks/query_bomb.py $(BENCH_ARGS)

bench-cli: install ## CPU seconds of kueue-graphql --help/--version/why --help against a bare interpreter (no control plane)
	$(RUN) python benchmarks/cli_start.py $(BENCH_ARGS)

bench-units: install ## analysis units and analysis CPU of the largest docs queries and the query bombs (no control plane)
	$(RUN) python benchmarks/analysis_units.py $(BENCH_ARGS)

IMAGE ?= kueue-graphql:$(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)
ENGINE ?= $(shell command -v podman 2>/dev/null || command -v docker 2>/dev/null)

image: graphiql-assets map-assets ## build the container image (Containerfile) with podman or docker; IMAGE=name:tag
	@test -n "$(ENGINE)" || { echo "make image needs podman or docker; none is on PATH" >&2; exit 2; }
	$(ENGINE) build -f Containerfile -t $(IMAGE) .

wheel: graphiql-assets map-assets ## build the wheel into dist/ (what the image installs), GraphiQL's and the admission map's files inside
	$(UV) build --wheel --out-dir dist

schema: install ## regenerate schema/schema.graphql from the code
	$(RUN) kueue-graphql schema > schema/schema.graphql

clean: ## remove local state (not the cached binaries)
	-$(RUN) python -m tests.cluster down
	rm -rf .venv .pytest_cache .mypy_cache .ruff_cache tests/node/node_modules web/admission-map/node_modules
