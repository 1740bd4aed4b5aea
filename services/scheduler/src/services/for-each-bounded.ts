// Runs `work` over the items, at most `concurrency` at once. A library such as p-map would do
// it too; these few lines spare the service a dependency.
export async function forEachBounded<T>(
  items: readonly T[],
  concurrency: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    for (let item = items[next++]; item !== undefined; item = items[next++]) await work(item);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
}
