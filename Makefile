# Jarvis: common commands. `make help` lists them.
SHELL := /bin/bash
NAME ?=

.PHONY: help install up down logs dev test bench key lint build

help: ## List the commands
	@grep -E '^[a-z]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

install: ## Install dependencies (pnpm, from the lockfile)
	pnpm install --frozen-lockfile

up: ## Run the whole stack in Docker (Traefik on https://localhost)
	docker compose up -d --build

down: ## Stop the Docker stack (data volumes are kept)
	docker compose down

logs: ## Follow the Docker stack's logs
	docker compose logs -f --tail=200

dev: install ## Run the six services as local processes (embedded Postgres, local NATS and Redis)
	pnpm run dev

test: install ## Lint, typecheck, validate the compose files, and run every test
	pnpm test

bench: install ## Run the benchmarks; figures are printed and written to bench-results/
	pnpm run bench

lint: install ## Lint and format-check everything
	pnpm run lint

build: install ## Build every service
	pnpm run build

key: ## Create a user and print its API key: make key NAME=alice
	@if [ -z "$(NAME)" ]; then echo "usage: make key NAME=<user name>" >&2; exit 64; fi
	@if docker compose ps --status running -q gateway 2>/dev/null | grep -q .; then \
		docker compose exec gateway node dist/create-key.js "$(NAME)"; \
	else \
		pnpm --filter @jarvis/gateway run --silent key "$(NAME)"; \
	fi
