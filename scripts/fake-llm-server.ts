// The test kit's fake LLM as a server of its own: CI's container stage runs it on the compose
// network in place of Ollama (infra/ci/compose.ci.yaml), since a process on the host's loopback
// cannot be reached from the containers. Every chat gets the fake's default reply, which quotes
// the question.
import { startFakeLlm } from '@jarvis/testkit';

const fake = await startFakeLlm({
  host: '0.0.0.0',
  // Ollama's port, so compose.yaml's OLLAMA_BASE_URL default reaches it.
  port: Number(process.env.FAKE_LLM_PORT ?? 11434),
  models: ['llama3.2:3b', 'nomic-embed-text'],
});
console.log(`fake LLM listening on ${fake.url}`);

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    fake.close().then(() => process.exit(0));
  });
}
