import { SERVICE_NAMES, type Stack } from '@jarvis/testkit';

// Where a known secret was found: in an answer of the API, or in a service's log line.
export type SecretScan = {
  found: string[];
  answers: number;
  logLines: number;
  services: number;
  summary: string;
};

// Looks for every secret in every answer given and in every line every service of the stack
// printed. Run it once the stack stopped, so that what the services log on their way down is
// read too. A process keeps its last 2,000,000 characters of output: a longer one would be
// read in part, so it throws rather than pass on a part.
export function scanForSecrets(
  stack: Stack,
  answers: readonly string[],
  secrets: Record<string, string>,
): SecretScan {
  const logs = SERVICE_NAMES.map((name) => ({ name, output: stack.output(name) }));
  const cut = logs.find(({ output }) => output.length >= 2_000_000);
  if (cut) throw new Error(`the log of ${cut.name} was cut: the scan would read only its end`);
  const lines = logs.flatMap(({ output }) => output.split('\n').filter(Boolean));
  const found = Object.entries(secrets).flatMap(([name, secret]) => [
    ...answers.filter((answer) => answer.includes(secret)).map(() => `${name} in an answer`),
    ...lines.filter((line) => line.includes(secret)).map((line) => `${name} in a log: ${line}`),
  ]);
  return {
    found,
    answers: answers.length,
    logLines: lines.length,
    services: logs.length,
    summary: `secret scan: ${Object.keys(secrets).length} secrets, ${answers.length} API answers and ${lines.length} log lines of ${logs.length} services: ${found.length} found`,
  };
}
