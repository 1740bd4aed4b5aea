import { type ChatReplyFn, startFakeLlm } from '@jarvis/testkit';
import { cpuReport, FakeCommand, reportReady, serveCommands } from './ipc';

// The testkit's fake model server for overhead.ts, in a process of its own: on this machine
// it still competes with the gateway for the two cores (a real provider would not), but its work
// is not charged to the gateway's event loop, and the direct baseline calls the same process.
// It answers with its default reply ("fake reply to: …", streamed word by word when asked),
// after the configured delay, drawn per request between half and one and a half times it: a fixed
// delay would make 50 requesters march in step and reach the gateway in waves of 50.

const fake = await startFakeLlm();
let delayMs = 0;
const answer: ChatReplyFn = () =>
  delayMs > 0 ? { delayMs: Math.round(delayMs * (0.5 + Math.random())) } : {};
fake.onChat(answer);

serveCommands(
  FakeCommand,
  (command) => {
    if (command.type === 'cpu') return cpuReport();
    delayMs = command.delayMs;
    // The fake keeps every request it saw; a long run would otherwise grow its heap (and its
    // garbage collections) from one scenario to the next.
    fake.reset();
    fake.onChat(answer);
    return { type: 'configured' };
  },
  () => fake.close(),
);
reportReady({ type: 'ready', openaiBaseUrl: fake.openaiBaseUrl });
