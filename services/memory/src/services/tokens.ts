// A provider-neutral estimate: about four characters a token in English. Budgets keep a margin,
// so an estimate is enough here; the orchestrator counts exactly per provider.
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}
