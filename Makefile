# Jarvis: common commands. `make help` lists them.
SHELL := /bin/bash
NAME ?=
# How the stack is driven: Docker Compose v2 by default; `make backup COMPOSE="docker-compose -p
# name -f compose.yaml -f other.yaml"` points the targets at another project (CI does).
COMPOSE ?= docker compose
# pnpm at package.json's packageManager version. Where the pnpm on PATH is another version (or
# there is none), `make install` puts that one in .tools/, which comes first on PATH here.
PNPM_VERSION := $(shell node -p "require('./package.json').packageManager.split('@')[1]" 2>/dev/null)
export PATH := $(CURDIR)/.tools/node_modules/.bin:$(PATH)

.PHONY: help install up down logs dev test bench key lint build images

help: ## List the commands
	@grep -E '^[a-z]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

install: ## Install dependencies from the lockfile (and the pinned pnpm first, if missing)
	@if [ "$$(pnpm --version 2>/dev/null)" != "$(PNPM_VERSION)" ]; then \
		echo "pnpm $(PNPM_VERSION) (package.json's packageManager) is not on PATH: installing it into .tools/ with npm"; \
		npm install --no-save --no-package-lock --no-audit --no-fund --prefix .tools "pnpm@$(PNPM_VERSION)"; \
	fi
	pnpm install --frozen-lockfile

.PHONY: preflight
preflight: ## Check what the tests need besides Node (NATS, Redis, PostgreSQL, Chromium, docker-compose)
	@bash scripts/preflight.sh

up: ## Run the whole stack in Docker (Traefik on https://localhost)
	$(COMPOSE) up -d --build

down: ## Stop the Docker stack (data volumes are kept)
	$(COMPOSE) down

logs: ## Follow the Docker stack's logs
	$(COMPOSE) logs -f --tail=200

dev: install ## Run the six services as local processes (embedded Postgres, local NATS and Redis)
	pnpm run dev

test: preflight install ## Lint, typecheck, validate the compose files, and run every test
	@if [ -n "$${DATABASE_URL:-}" ]; then \
		echo "tests run on the PostgreSQL server at DATABASE_URL, a fresh database per test file; unset it for the embedded PGlite"; \
	else \
		echo "tests run on the embedded PGlite; for PostgreSQL 17 + pgvector (production's engine): sudo infra/ci/postgres17.sh start, then DATABASE_URL=\$$(infra/ci/postgres17.sh url) make test"; \
	fi
	pnpm test

bench: install ## Run the benchmarks; figures are printed and written to bench-results/
	pnpm run bench

lint: install ## Lint and format-check everything
	pnpm run lint

build: install ## Build every service
	pnpm run build

# Each service and its default port (services/Dockerfile's SERVICE and PORT; compose.yaml's too).
SERVICE_PORTS := gateway:8080 orchestrator:8081 memory:8082 model-gateway:8083 tools:8084 scheduler:8085
# More flags for the image builder, e.g. IMAGE_BUILD_FLAGS=--network=host.
IMAGE_BUILD_FLAGS ?=
# Docker where an engine answers; otherwise podman, in Docker's image format (the OCI format
# drops HEALTHCHECK).
images: ## Build the six service images, tagged jarvis/<service>:local (Docker, or else podman)
	@if docker info >/dev/null 2>&1; then build=(docker build); \
	else build=(podman build --format docker); fi; \
	for pair in $(SERVICE_PORTS); do \
		service=$${pair%%:*}; port=$${pair##*:}; \
		echo "building jarvis/$$service:local"; \
		"$${build[@]}" --quiet $(IMAGE_BUILD_FLAGS) -f services/Dockerfile \
			--build-arg SERVICE=$$service --build-arg PORT=$$port \
			-t jarvis/$$service:local . >/dev/null || exit 1; \
	done

key: ## Create a user and print its API key: make key NAME=alice
	@if [ -z "$(NAME)" ]; then echo "usage: make key NAME=<user name>" >&2; exit 64; fi
	@if $(COMPOSE) exec -T gateway true >/dev/null 2>&1; then \
		$(COMPOSE) exec gateway node dist/create-key.js "$(NAME)"; \
	else \
		pnpm --filter @jarvis/gateway run --silent key "$(NAME)"; \
	fi

# All state in one file (docs/backup.md): the compose stack's Postgres when its container exists,
# else make dev's database (DATABASE_URL, or the embedded one in .data/postgres).
OUT ?= backups/jarvis-$(BACKUP_STAMP).backup
BACKUP_STAMP := $(shell date -u +%Y%m%dT%H%M%SZ)
FILE ?=
EMBEDDED_PG_DIR ?= $(CURDIR)/.data/postgres
# make dev's key that seals notification secrets (the tools service makes it on first start).
SECRET_KEY_FILE ?= $(CURDIR)/.data/secret.key
APP_SERVICES := gateway orchestrator memory model-gateway tools scheduler
# The tools service's secret key file, read from and written to its `secrets` volume in the
# tools container (the gateway, which runs the backup tool, never mounts it): the running one,
# else a one-off (docker-compose 1.29 links a one-off to its service's running containers, which
# podman refuses). Prints nothing when the install sets JARVIS_SECRET_KEY, or tools never started.
TOOLS_KEY_SCRIPT = 'if [ -z "$$JARVIS_SECRET_KEY" ] && [ -f "$$JARVIS_SECRET_KEY_FILE" ]; then cat "$$JARVIS_SECRET_KEY_FILE"; fi'
TOOLS_KEY_READ = { $(COMPOSE) exec -T tools sh -c $(TOOLS_KEY_SCRIPT) 2>/dev/null \
	|| $(COMPOSE) run --rm --no-deps -T tools sh -c $(TOOLS_KEY_SCRIPT); }
TOOLS_KEY_WRITE = $(COMPOSE) run --rm --no-deps -T tools sh -c \
	'umask 077 && cat > "$$JARVIS_SECRET_KEY_FILE.restoring" && mv "$$JARVIS_SECRET_KEY_FILE.restoring" "$$JARVIS_SECRET_KEY_FILE"'
.PHONY: backup restore

backup: ## Write all state to one file: make backup [OUT=path] (JARVIS_BACKUP_PASSPHRASE encrypts it)
	@mkdir -p "$(dir $(OUT))"; umask 077; set -o pipefail; \
	cli=(node dist/backup-cli.js backup --key-file -); pass=(-e JARVIS_BACKUP_PASSPHRASE="$$JARVIS_BACKUP_PASSPHRASE"); \
	if $(COMPOSE) exec -T gateway true >/dev/null 2>&1; then \
		$(TOOLS_KEY_READ) | $(COMPOSE) exec -T "$${pass[@]}" gateway "$${cli[@]}" > "$(OUT).partial" \
			&& mv "$(OUT).partial" "$(OUT)" || { rm -f "$(OUT).partial"; exit 1; }; \
	elif $(COMPOSE) exec -T postgres true >/dev/null 2>&1; then \
		$(TOOLS_KEY_READ) | $(COMPOSE) run --rm --no-deps -T "$${pass[@]}" gateway "$${cli[@]}" > "$(OUT).partial" \
			&& mv "$(OUT).partial" "$(OUT)" || { rm -f "$(OUT).partial"; exit 1; }; \
	else \
		EMBEDDED_PG_DIR="$(EMBEDDED_PG_DIR)" JARVIS_SECRET_KEY_FILE="$(SECRET_KEY_FILE)" \
			pnpm --filter @jarvis/gateway run --silent backup --out "$(abspath $(OUT))" || exit 1; \
	fi; echo "backup written to $(OUT)"

# Compose: the services stop, the restore runs in a one-off gateway container with this
# checkout's migrations, and the stack starts again (each service then finds its schema current).
restore: ## Restore a backup into a fresh install: make restore FILE=path [FORCE=1]
	@if [ -z "$(FILE)" ]; then echo "usage: make restore FILE=<backup file> [FORCE=1]" >&2; exit 64; fi
	@if $(COMPOSE) ps -a -q postgres 2>/dev/null | grep -q .; then \
		$(COMPOSE) stop $(APP_SERVICES) && $(COMPOSE) up -d postgres || exit 1; \
		for attempt in $$(seq 60); do \
			$(COMPOSE) exec -T postgres pg_isready -q -h 127.0.0.1 && break; sleep 2; \
		done; \
		key=$$(mktemp) && trap 'rm -f "$$key"' EXIT; \
		$(COMPOSE) run --rm --no-deps -T -e JARVIS_BACKUP_PASSPHRASE="$$JARVIS_BACKUP_PASSPHRASE" \
			-v "$(CURDIR)/services:/jarvis-services:ro" gateway node dist/backup-cli.js restore - \
			--migrations /jarvis-services --key-file - $(if $(FORCE),--force) < "$(FILE)" > "$$key" || exit 1; \
		if [ -s "$$key" ]; then $(TOOLS_KEY_WRITE) < "$$key" || exit 1; echo "secret key restored"; fi; \
		$(COMPOSE) up -d; \
	else \
		EMBEDDED_PG_DIR="$(EMBEDDED_PG_DIR)" JARVIS_SECRET_KEY_FILE="$(SECRET_KEY_FILE)" \
			pnpm --filter @jarvis/gateway run --silent restore "$(abspath $(FILE))" $(if $(FORCE),--force); \
	fi
