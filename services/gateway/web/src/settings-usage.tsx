import type { ModelUsageResponse } from '@jarvis/contracts';
import { useApp } from './app-context';
import { ErrorNotice, Loading, MetaList } from './components';
import { formatCost, formatDateTime } from './format';
import { totalsPerDay } from './settings-usage-days';
import { useResource } from './use-resource';

function formatCount(value: number): string {
  return value.toLocaleString('en');
}

// "1,200 of 50,000 tokens", or the count alone when there is no limit.
function ofLimit(used: string, limit: string | null): string {
  return limit === null ? `${used} (no limit)` : `${used} of ${limit}`;
}

export function UsageSetting() {
  const { client } = useApp();
  const usage = useResource('usage', () => client.get<ModelUsageResponse>('/v1/usage'));
  const data = usage.data;

  return (
    <section class="card settings" aria-labelledby="usage-title">
      <h2 id="usage-title">Usage and budget</h2>
      <ErrorNotice message={usage.error} />
      {data ? (
        <>
          <p class="muted">
            Today (UTC) as the budgets count it; they start afresh {formatDateTime(data.resetsAt)}.
          </p>
          <MetaList
            items={[
              [
                'Tokens today',
                ofLimit(
                  formatCount(data.today.inputTokens + data.today.outputTokens),
                  data.limits.dailyTokens === null ? null : formatCount(data.limits.dailyTokens),
                ),
              ],
              [
                'Cost today',
                ofLimit(
                  formatCost(data.today.costUsd),
                  data.limits.dailyCostUsd === null ? null : formatCost(data.limits.dailyCostUsd),
                ),
              ],
              ['Model calls today', formatCount(data.today.requests)],
              [
                'Calls a minute',
                data.limits.requestsPerMinute === null
                  ? 'no limit'
                  : `at most ${formatCount(data.limits.requestsPerMinute)}`,
              ],
            ]}
          />
          <h3>
            Day by day, {data.from} to {data.to}
          </h3>
          {data.days.length === 0 ? (
            <p class="muted">No model calls in these days.</p>
          ) : (
            <div class="usage-scroll">
              <table class="usage-table">
                <thead>
                  <tr>
                    <th scope="col">Day</th>
                    <th scope="col">Calls</th>
                    <th scope="col">Tokens in</th>
                    <th scope="col">Tokens out</th>
                    <th scope="col">Cost</th>
                  </tr>
                </thead>
                <tbody>
                  {totalsPerDay(data.days).map((day) => (
                    <tr key={day.day}>
                      <th scope="row">{day.day}</th>
                      <td>{formatCount(day.requests)}</td>
                      <td>{formatCount(day.inputTokens)}</td>
                      <td>{formatCount(day.outputTokens)}</td>
                      <td>{formatCost(day.costUsd)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </>
      ) : usage.error ? null : (
        <Loading what="your usage" />
      )}
    </section>
  );
}
