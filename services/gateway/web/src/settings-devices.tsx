import type { PushSubscriptionsListResponse, PushSubscriptionView } from '@jarvis/contracts';
import { useState } from 'preact/hooks';
import { ApiError } from './api-client';
import { useApp } from './app-context';
import { ErrorNotice, Loading } from './components';
import { formatDateTime } from './format';
import {
  isPushSupported,
  subscribeThisDevice,
  thisDeviceSubscriptionId,
  unsubscribeThisDevice,
} from './push';
import { useResource } from './use-resource';

// A name the user recognises in the list later ("Android phone"), from what the browser says of
// itself; the user can change it before subscribing.
function guessDeviceName(): string {
  const agent = navigator.userAgent;
  if (/Android/.test(agent)) return 'Android phone';
  if (/iPhone|iPad/.test(agent)) return 'iPhone';
  if (/Mac OS X/.test(agent)) return 'Mac';
  if (/Windows/.test(agent)) return 'Windows computer';
  if (/Linux/.test(agent)) return 'Linux computer';
  return 'This device';
}

function errorText(failure: unknown): string {
  return failure instanceof Error ? failure.message : String(failure);
}

function DeviceRow(props: { device: PushSubscriptionView; onRemoved: () => void }) {
  const { client } = useApp();
  const { device } = props;
  const [isRemoving, setIsRemoving] = useState(false);
  const [error, setError] = useState<string | undefined>();
  const isThisDevice = device.id === thisDeviceSubscriptionId();
  const name = device.deviceName ?? device.endpointHost;

  async function remove() {
    setIsRemoving(true);
    setError(undefined);
    try {
      // This browser's own subscription goes from the push service too, not only from the list.
      if (isThisDevice) await unsubscribeThisDevice(client);
      else
        await client.send(
          'DELETE',
          `/v1/notifications/push/subscriptions/${encodeURIComponent(device.id)}`,
        );
      props.onRemoved();
    } catch (failure) {
      // Already gone (the push service had answered 410 to a send): the list is merely late.
      if (failure instanceof ApiError && failure.status === 404) props.onRemoved();
      else setError(errorText(failure));
      setIsRemoving(false);
    }
  }

  return (
    <li class="card device-row" aria-label={name}>
      <div class="key-head">
        <span class="row-title">{name}</span>
        {isThisDevice ? <span class="badge badge-active">this device</span> : null}
      </div>
      <p class="muted">
        Through {device.endpointHost} · since {formatDateTime(device.createdAt)}
      </p>
      <div class="button-row">
        <button type="button" disabled={isRemoving} onClick={() => void remove()}>
          Remove
        </button>
      </div>
      <ErrorNotice message={error} />
    </li>
  );
}

// The devices that get push notifications: each browser subscribes for itself (the browser's
// push service gives it an address), and any can be removed from here. `onChanged`: the first
// device made the webpush channel, or removing the last one removed it.
export function PushDevices(props: { onChanged: () => void }) {
  const { client } = useApp();
  const devices = useResource('push-devices', () =>
    client.get<PushSubscriptionsListResponse>('/v1/notifications/push/subscriptions'),
  );
  const [deviceName, setDeviceName] = useState(guessDeviceName);
  const [isSubscribing, setIsSubscribing] = useState(false);
  const [error, setError] = useState<string | undefined>();
  const isSupported = isPushSupported();
  const list = devices.data?.subscriptions ?? [];
  const isSubscribed = list.some((device) => device.id === thisDeviceSubscriptionId());
  const afterChange = () => {
    devices.reload();
    props.onChanged();
  };

  async function subscribe(event: Event) {
    event.preventDefault();
    setIsSubscribing(true);
    setError(undefined);
    try {
      await subscribeThisDevice(client, deviceName);
      afterChange();
    } catch (failure) {
      setError(errorText(failure));
    } finally {
      setIsSubscribing(false);
    }
  }

  return (
    <div aria-busy={isSubscribing}>
      {!isSupported ? (
        <p class="notice">
          This browser cannot subscribe from this address: push needs HTTPS with a trusted
          certificate (or localhost), and on an iPhone the app added to the home screen.
        </p>
      ) : isSubscribed ? null : (
        <form
          class="toolbar key-form"
          aria-label="Subscribe this device"
          onSubmit={(event) => void subscribe(event)}
        >
          <div class="field">
            <label for="push-device-name">This device's name</label>
            <input
              id="push-device-name"
              value={deviceName}
              maxLength={100}
              onInput={(event) => setDeviceName(event.currentTarget.value)}
            />
          </div>
          <button type="submit" class="primary" disabled={isSubscribing}>
            Subscribe this device
          </button>
        </form>
      )}
      <ErrorNotice message={error ?? devices.error} />
      {devices.data ? (
        list.length === 0 ? (
          <p class="muted">No device is subscribed yet.</p>
        ) : (
          <ul class="cards" aria-label="Subscribed devices">
            {list.map((device) => (
              <DeviceRow key={device.id} device={device} onRemoved={afterChange} />
            ))}
          </ul>
        )
      ) : devices.error ? null : (
        <Loading what="your devices" />
      )}
    </div>
  );
}
