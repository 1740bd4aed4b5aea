#!/bin/sh
# One-shot model download for the `ollama-pull` compose service (same image as `ollama`).
# Pulls OLLAMA_CHAT_MODEL and OLLAMA_EMBED_MODEL from the server at OLLAMA_HOST; the pull is
# incremental, so on later starts it only checks for updates. Watch it with:
#   docker compose logs -f ollama-pull
set -eu

pull() {
  model=$1
  attempt=1
  while :; do
    echo "ollama-pull: pulling $model (attempt $attempt) from $OLLAMA_HOST"
    if ollama pull "$model"; then
      echo "ollama-pull: $model ready"
      return 0
    fi
    if [ "$attempt" -ge 5 ]; then
      echo "ollama-pull: giving up on $model after $attempt attempts" >&2
      return 1
    fi
    attempt=$((attempt + 1))
    sleep $((attempt * 10))
  done
}

status=0
for model in "${OLLAMA_CHAT_MODEL:-}" "${OLLAMA_EMBED_MODEL:-}"; do
  [ -n "$model" ] || continue
  pull "$model" || status=1
done
ollama list
exit "$status"
