# CI only: the test kit's fake LLM (scripts/fake-llm-server.ts) as a container on the compose
# network, in Ollama's place (see compose.ci.yaml). The build context is the repo root; the steps
# up to `pnpm install` are services/Dockerfile's own, so its cached layers serve it too.
FROM node:20-bookworm-slim
RUN npm install -g pnpm@10.34.8
ENV CI=true
WORKDIR /repo
COPY pnpm-lock.yaml pnpm-workspace.yaml package.json ./
RUN pnpm fetch
COPY . .
RUN pnpm install --offline --frozen-lockfile
USER node
EXPOSE 11434
CMD ["node_modules/.bin/tsx", "scripts/fake-llm-server.ts"]
