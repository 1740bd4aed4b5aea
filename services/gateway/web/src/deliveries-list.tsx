import type { DeliveriesListResponse, Delivery } from '@jarvis/contracts';
import { useEffect, useState } from 'preact/hooks';
import { withQuery } from './api-client';
import { useApp } from './app-context';
import { ErrorNotice, Loading, StatusBadge } from './components';
import { formatInZone } from './time-zones';

const PAGE = 30;

function DeliveryItem({ delivery, timeZone }: { delivery: Delivery; timeZone: string }) {
  const when =
    delivery.status === 'sent'
      ? `sent ${formatInZone(delivery.sentAt, timeZone)}`
      : delivery.nextAttemptAt && (delivery.status === 'held' || delivery.status === 'retrying')
        ? `next try ${formatInZone(delivery.nextAttemptAt, timeZone)}`
        : formatInZone(delivery.createdAt, timeZone);
  return (
    <li class="card delivery">
      <p class="step-head">
        <StatusBadge value={delivery.status} />
        <strong>{delivery.title}</strong>
      </p>
      <p class="muted delivery-meta">
        {delivery.channel} · {delivery.kind.replaceAll('_', ' ')} · {when} ·{' '}
        {delivery.attempts === 1 ? '1 attempt' : `${delivery.attempts} attempts`}
      </p>
      {delivery.error ? <p class="field-error">{delivery.error}</p> : null}
    </li>
  );
}

// What was sent, held or failed, newest first; loaded again when `generation` moves (a test).
export function DeliveriesList(props: { timeZone: string; generation: number }) {
  const { client } = useApp();
  const [deliveries, setDeliveries] = useState<Delivery[]>([]);
  const [nextBefore, setNextBefore] = useState<string | undefined>();
  const [isLoading, setIsLoading] = useState(true);
  const [error, setError] = useState<string | undefined>();
  const [refreshes, setRefreshes] = useState(0);

  async function load(before?: string) {
    setIsLoading(true);
    setError(undefined);
    try {
      const page = await client.get<DeliveriesListResponse>(
        withQuery('/v1/notifications/deliveries', { limit: PAGE, before }),
      );
      setDeliveries((current) => (before ? [...current, ...page.deliveries] : page.deliveries));
      setNextBefore(page.nextBefore);
    } catch (failure) {
      setError(failure instanceof Error ? failure.message : String(failure));
    } finally {
      setIsLoading(false);
    }
  }

  useEffect(() => {
    void load();
  }, [props.generation, refreshes]);

  return (
    <section aria-labelledby="deliveries-title">
      <div class="page-header">
        <h3 id="deliveries-title">Sent notifications</h3>
        <button
          type="button"
          class="small"
          disabled={isLoading}
          onClick={() => setRefreshes((value) => value + 1)}
        >
          Refresh
        </button>
      </div>
      <ErrorNotice message={error} />
      {!isLoading && deliveries.length === 0 && !error ? (
        <p class="empty">Nothing sent yet.</p>
      ) : null}
      <ol class="cards" aria-label="Sent notifications">
        {deliveries.map((delivery) => (
          <DeliveryItem key={delivery.id} delivery={delivery} timeZone={props.timeZone} />
        ))}
      </ol>
      {isLoading ? <Loading what="the history" /> : null}
      {nextBefore && !isLoading ? (
        <button type="button" onClick={() => void load(nextBefore)}>
          Load more
        </button>
      ) : null}
    </section>
  );
}
