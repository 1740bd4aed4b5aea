import type {
  Channel,
  ChannelResponse,
  ChannelsListResponse,
  ChannelType,
  NotificationKind,
  TelegramLinkResponse,
  TestResponse,
} from '@jarvis/contracts';
import type { ComponentChildren, InputHTMLAttributes } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError } from './api-client';
import { useApp } from './app-context';
import { bodyOf, type FormType, initialValues, storedSecret } from './channel-form';
import { ErrorNotice, Loading, StatusBadge } from './components';
import { splitFieldError } from './format';
import { PushDevices } from './settings-devices';
import { formatInZone } from './time-zones';
import { useResource } from './use-resource';

type ChannelOf<T extends ChannelType> = Extract<Channel, { type: T }>;
type Problem = { field?: string; text: string };

const TITLES: Record<ChannelType, string> = {
  ntfy: 'ntfy',
  webhook: 'Webhook',
  email: 'Email',
  telegram: 'Telegram',
  webpush: 'Push notifications',
};

const INTROS: Record<ChannelType, string> = {
  ntfy: 'Push to your phone through an ntfy server (ntfy.sh or your own).',
  webhook:
    "A signed JSON POST to your URL, in Jarvis's format or for a Slack or Discord incoming webhook.",
  email: "Mail through the install's SMTP server (to an address you confirm) or your own.",
  telegram: "Notifications and a chat with Jarvis in Telegram, through the install's bot.",
  webpush:
    "The phone's or computer's own notifications, from this app; tapping one opens it here. Each browser subscribes for itself.",
};

// What a channel can be sent; a test always goes through.
const EVENT_LABELS: Record<Exclude<NotificationKind, 'test'>, string> = {
  reminder: 'Reminders',
  scheduled_result: 'Results of scheduled work',
  scheduled_failure: 'Failures of scheduled work',
  mission_report: 'Mission reports',
  approval_request: 'Approval requests',
  note: 'Notes from Jarvis',
  // Only the admin is sent any: Grafana posts them with the admin key.
  alert: 'Ops alerts (admin)',
};
const ALL_EVENTS = Object.keys(EVENT_LABELS);

// The fields each form may be told about by a 400; a message naming another goes above the
// buttons.
const FIELDS: Record<FormType, string[]> = {
  ntfy: ['url', 'topic', 'token', 'priority', 'clickUrl'],
  webhook: ['url', 'secret', 'format'],
  email: [
    'to',
    'smtp.host',
    'smtp.port',
    'smtp.security',
    'smtp.user',
    'smtp.password',
    'smtp.from',
  ],
};

function messageOf(failure: unknown): string {
  return failure instanceof Error ? failure.message : String(failure);
}

type InputExtras = InputHTMLAttributes<HTMLInputElement>;

function FormField(props: {
  form: string;
  field: string;
  label: string;
  problem: Problem | undefined;
  hint?: string;
  children: (attributes: Record<string, string | boolean | undefined>) => ComponentChildren;
}) {
  const id = `${props.form}-${props.field.replace('.', '-')}`;
  const error = props.problem?.field === props.field ? props.problem.text : undefined;
  const describedBy = [props.hint ? `${id}-hint` : '', error ? `${id}-error` : '']
    .filter(Boolean)
    .join(' ');
  return (
    <div class="field">
      <label for={id}>{props.label}</label>
      {props.children({
        id,
        'aria-invalid': error ? true : undefined,
        'aria-describedby': describedBy || undefined,
      })}
      {props.hint ? (
        <p id={`${id}-hint`} class="hint">
          {props.hint}
        </p>
      ) : null}
      {error ? (
        <p id={`${id}-error`} class="field-error">
          {error}
        </p>
      ) : null}
    </div>
  );
}

// What a test answered: sent, or why not.
function TestResult({ result }: { result: TestResponse['delivery'] | string | undefined }) {
  if (result === undefined) return null;
  if (typeof result === 'string') return <ErrorNotice message={result} />;
  return (
    <output class="test-result">
      Test: <StatusBadge value={result.status} />
      {result.error ? <span class="field-error"> {result.error}</span> : null}
    </output>
  );
}

function useTest(type: ChannelType, onTested: () => void) {
  const { client } = useApp();
  const [result, setResult] = useState<TestResponse['delivery'] | string | undefined>();
  const [isTesting, setIsTesting] = useState(false);
  async function test() {
    setIsTesting(true);
    setResult(undefined);
    try {
      const { delivery } = await client.send<TestResponse>('POST', '/v1/notifications/test', {
        channel: type,
      });
      setResult(delivery);
    } catch (failure) {
      setResult(messageOf(failure));
    } finally {
      setIsTesting(false);
      onTested();
    }
  }
  return { result, isTesting, test };
}

function ConfirmEmail(props: { to: string; onConfirmed: (channel: Channel) => void }) {
  const { client } = useApp();
  const [code, setCode] = useState('');
  const [error, setError] = useState<string | undefined>();
  const [isBusy, setIsBusy] = useState(false);
  async function confirm(event: Event) {
    event.preventDefault();
    setIsBusy(true);
    setError(undefined);
    try {
      const { channel } = await client.send<ChannelResponse>(
        'POST',
        '/v1/notifications/channels/email/confirm',
        { code: code.trim() },
      );
      props.onConfirmed(channel);
    } catch (failure) {
      setError(messageOf(failure));
    } finally {
      setIsBusy(false);
    }
  }
  return (
    <form
      class="confirm"
      aria-label="Confirm your address"
      onSubmit={(event) => void confirm(event)}
    >
      <p>
        A code was mailed to <strong>{props.to}</strong>. Nothing is sent there until you confirm
        it.
      </p>
      <div class="toolbar">
        <div class="field">
          <label for="email-code">Code</label>
          <input
            id="email-code"
            inputMode="numeric"
            autocomplete="one-time-code"
            pattern="\d{6}"
            maxLength={6}
            value={code}
            onInput={(event) => setCode(event.currentTarget.value)}
            required
          />
        </div>
        <button type="submit" class="primary" disabled={isBusy}>
          Confirm
        </button>
      </div>
      <ErrorNotice message={error} />
    </form>
  );
}

function EventChoices(props: { events: string[]; onChange: (events: string[]) => void }) {
  return (
    <fieldset class="events field-wide">
      <legend>Send</legend>
      {Object.entries(EVENT_LABELS).map(([kind, label]) => (
        <label key={kind} class="check">
          <input
            type="checkbox"
            checked={props.events.includes(kind)}
            onChange={(event) =>
              props.onChange(
                event.currentTarget.checked
                  ? [...props.events, kind]
                  : props.events.filter((other) => other !== kind),
              )
            }
          />
          {label}
        </label>
      ))}
    </fieldset>
  );
}

function ChannelForm(props: {
  type: FormType;
  channel: Channel | undefined;
  onChanged: (channel: Channel | undefined) => void;
  onTested: () => void;
}) {
  const { client } = useApp();
  const { type, channel } = props;
  const form = `channel-${type}`;
  const [values, setValues] = useState(() => initialValues(channel));
  const [isOwnSmtp, setIsOwnSmtp] = useState(channel?.type === 'email' && !!channel.smtp);
  const [events, setEvents] = useState<string[]>(channel?.events ?? ALL_EVENTS);
  const [problem, setProblem] = useState<Problem | undefined>();
  const [isBusy, setIsBusy] = useState(false);
  const [saved, setSaved] = useState(false);
  const tester = useTest(type, props.onTested);

  const set = (field: string) => (event: { currentTarget: { value: string } }) => {
    const { value } = event.currentTarget;
    setValues((current) => ({ ...current, [field]: value }));
  };
  const field = (name: string, label: string, extra: InputExtras = {}, hint?: string) => {
    const secret = storedSecret(channel, name);
    return (
      <FormField form={form} field={name} label={label} problem={problem} hint={hint}>
        {(attributes) => (
          <input
            {...attributes}
            {...extra}
            value={values[name] ?? ''}
            placeholder={secret ?? extra.placeholder}
            onInput={set(name)}
          />
        )}
      </FormField>
    );
  };
  const secretField = (name: string, label: string, isRequired: boolean) => {
    const isStored = storedSecret(channel, name) !== undefined;
    return field(
      name,
      label,
      { type: 'password', autocomplete: 'new-password', required: isRequired && !isStored },
      isStored ? 'Stored. Leave empty to keep it; it is never shown again.' : undefined,
    );
  };

  async function save(event: Event) {
    event.preventDefault();
    setIsBusy(true);
    setProblem(undefined);
    setSaved(false);
    try {
      const answer = await client.send<ChannelResponse>(
        'PUT',
        `/v1/notifications/channels/${type}`,
        bodyOf(type, values, isOwnSmtp, events),
      );
      setValues(initialValues(answer.channel));
      setSaved(true);
      props.onChanged(answer.channel);
    } catch (failure) {
      const message = messageOf(failure);
      setProblem(
        failure instanceof ApiError && failure.status === 400
          ? splitFieldError(message, FIELDS[type])
          : { text: message },
      );
    } finally {
      setIsBusy(false);
    }
  }

  async function remove() {
    if (!window.confirm(`Remove the ${TITLES[type]} channel?`)) return;
    setIsBusy(true);
    setProblem(undefined);
    try {
      await client.send('DELETE', `/v1/notifications/channels/${type}`);
      setValues(initialValues(undefined));
      setEvents(ALL_EVENTS);
      setSaved(false);
      props.onChanged(undefined);
    } catch (failure) {
      setProblem({ text: messageOf(failure) });
    } finally {
      setIsBusy(false);
    }
  }

  return (
    <form aria-label={`${TITLES[type]} settings`} onSubmit={(event) => void save(event)}>
      <div class="form-grid">
        {type === 'ntfy' ? (
          <>
            {field('url', 'Server', {
              type: 'url',
              required: true,
              placeholder: 'https://ntfy.sh',
            })}
            {field('topic', 'Topic', { required: true, autocomplete: 'off', spellcheck: false })}
            {secretField('token', 'Access token (optional)', false)}
            <FormField form={form} field="priority" label="Priority" problem={problem}>
              {(attributes) => (
                <select {...attributes} value={values.priority} onChange={set('priority')}>
                  {['1', '2', '3', '4', '5'].map((level) => (
                    <option key={level} value={level}>
                      {level}
                    </option>
                  ))}
                </select>
              )}
            </FormField>
            {field(
              'clickUrl',
              'Opens on tap (optional)',
              { type: 'url' },
              'Without it, a notification opens its page in Jarvis.',
            )}
          </>
        ) : null}
        {type === 'webhook' ? (
          <>
            {field('url', 'URL', { type: 'url', required: true })}
            {secretField('secret', 'Signing secret (16+ characters)', true)}
            <FormField form={form} field="format" label="Body" problem={problem}>
              {(attributes) => (
                <select {...attributes} value={values.format} onChange={set('format')}>
                  <option value="jarvis">Jarvis (signed JSON)</option>
                  <option value="slack">Slack incoming webhook</option>
                  <option value="discord">Discord webhook</option>
                </select>
              )}
            </FormField>
          </>
        ) : null}
        {type === 'email' ? (
          <>
            {field('to', 'Address', { type: 'email', required: true, autocomplete: 'email' })}
            <div class="field field-wide">
              <label class="check">
                <input
                  type="checkbox"
                  checked={isOwnSmtp}
                  onChange={(event) => setIsOwnSmtp(event.currentTarget.checked)}
                />
                Send through my own SMTP server
              </label>
            </div>
            {isOwnSmtp ? (
              <>
                {field('smtp.host', 'SMTP host', { required: true, autocomplete: 'off' })}
                {field('smtp.port', 'Port', {
                  type: 'number',
                  min: 1,
                  max: 65_535,
                  required: true,
                  placeholder: '587',
                })}
                <FormField form={form} field="smtp.security" label="Security" problem={problem}>
                  {(attributes) => (
                    <select
                      {...attributes}
                      value={values['smtp.security']}
                      onChange={set('smtp.security')}
                    >
                      <option value="starttls">STARTTLS (587)</option>
                      <option value="tls">TLS (465)</option>
                      <option value="none">None</option>
                    </select>
                  )}
                </FormField>
                {field('smtp.user', 'User (optional)', { autocomplete: 'off' })}
                {secretField('smtp.password', 'Password (optional)', false)}
                {field('smtp.from', 'From (optional)', { type: 'email' })}
              </>
            ) : null}
          </>
        ) : null}
        <EventChoices events={events} onChange={setEvents} />
      </div>
      {problem && !problem.field ? <ErrorNotice message={problem.text} /> : null}
      {problem?.field ? (
        <p class="visually-hidden" role="alert">
          {`${problem.field}: ${problem.text}`}
        </p>
      ) : null}
      <div class="button-row" aria-busy={isBusy}>
        <button type="submit" class="primary" disabled={isBusy}>
          Save
        </button>
        {channel ? (
          <>
            {isWaitingForCode(channel) ? null : (
              <button
                type="button"
                disabled={isBusy || tester.isTesting}
                onClick={() => void tester.test()}
              >
                Test
              </button>
            )}
            <button type="button" class="danger" disabled={isBusy} onClick={() => void remove()}>
              Remove
            </button>
          </>
        ) : null}
        {saved ? <output class="muted">Saved.</output> : null}
        {tester.isTesting ? <output class="muted">Sending a test…</output> : null}
      </div>
      <TestResult result={tester.result} />
    </form>
  );
}

// An email address waiting for its code gets nothing yet.
function isWaitingForCode(channel: Channel | undefined): boolean {
  return channel?.type === 'email' && !channel.isConfirmed;
}

function ChannelState({ channel }: { channel: Channel | undefined }) {
  if (!channel) return <StatusBadge value="none" label="off" />;
  if (isWaitingForCode(channel)) return <StatusBadge value="pending" label="unconfirmed" />;
  return <StatusBadge value="active" label="on" />;
}

function ChannelSection(props: {
  type: ChannelType;
  channel: Channel | undefined;
  children: ComponentChildren;
}) {
  const id = `channel-${props.type}-title`;
  return (
    <section class="card settings channel" aria-labelledby={id}>
      <h3 id={id} class="channel-title">
        {TITLES[props.type]} <ChannelState channel={props.channel} />
      </h3>
      <p class="muted">{INTROS[props.type]}</p>
      {props.children}
    </section>
  );
}

const LINK_POLL_MS = 3_000;

// Linking happens in Telegram (`/start CODE` to the bot): while a code is live, the page asks
// now and then whether the chat is linked.
function TelegramLink(props: {
  channel: ChannelOf<'telegram'> | undefined;
  timeZone: string;
  onChanged: () => void;
  onTested: () => void;
}) {
  const { client } = useApp();
  const [link, setLink] = useState<TelegramLinkResponse | undefined>();
  const [error, setError] = useState<string | undefined>();
  const [isBusy, setIsBusy] = useState(false);
  const tester = useTest('telegram', props.onTested);
  const { channel, onChanged } = props;

  useEffect(() => {
    if (!link || channel) return;
    const timer = window.setInterval(() => {
      if (Date.parse(link.expiresAt) < Date.now()) setLink(undefined);
      else onChanged();
    }, LINK_POLL_MS);
    return () => window.clearInterval(timer);
  }, [link, channel, onChanged]);

  async function run(action: () => Promise<void>) {
    setIsBusy(true);
    setError(undefined);
    try {
      await action();
    } catch (failure) {
      setError(messageOf(failure));
    } finally {
      setIsBusy(false);
    }
  }

  const getCode = () =>
    run(async () => {
      setLink(await client.send<TelegramLinkResponse>('POST', '/v1/notifications/telegram/link'));
    });
  const unlink = () => {
    if (!window.confirm('Unlink your Telegram chat? Jarvis stops writing and answering there.')) {
      return;
    }
    void run(async () => {
      await client.send('DELETE', '/v1/notifications/channels/telegram');
      setLink(undefined);
      onChanged();
    });
  };

  if (channel) {
    return (
      <>
        <p>
          Linked to <strong>{channel.username ? `@${channel.username}` : 'your chat'}</strong>. What
          you write to the bot goes to your conversation here.
        </p>
        <div class="button-row" aria-busy={isBusy}>
          <button type="button" disabled={tester.isTesting} onClick={() => void tester.test()}>
            Test
          </button>
          <button type="button" class="danger" disabled={isBusy} onClick={unlink}>
            Unlink
          </button>
        </div>
        <TestResult result={tester.result} />
        <ErrorNotice message={error} />
      </>
    );
  }
  return (
    <>
      {link ? (
        <div class="link-code" aria-live="polite">
          <p>
            Send this to the bot from a private chat, before{' '}
            {formatInZone(link.expiresAt, props.timeZone)}:
          </p>
          <p>
            <code class="code-value">/start {link.code}</code>
          </p>
          {link.url ? (
            <p>
              <a href={link.url} target="_blank" rel="noopener noreferrer">
                Open the bot in Telegram
              </a>{' '}
              (the code is filled in)
            </p>
          ) : null}
          <output class="muted">Waiting for your message…</output>
        </div>
      ) : null}
      <div class="button-row">
        <button type="button" class="primary" disabled={isBusy} onClick={() => void getCode()}>
          {link ? 'New code' : 'Link Telegram'}
        </button>
      </div>
      <ErrorNotice message={error} />
    </>
  );
}

// What every device is sent; it is the channel's, not a device's.
function WebPushEvents(props: {
  channel: ChannelOf<'webpush'>;
  onChanged: (channel: Channel) => void;
  onTested: () => void;
}) {
  const { client } = useApp();
  const [events, setEvents] = useState<string[]>(props.channel.events);
  const [isBusy, setIsBusy] = useState(false);
  const [isSaved, setIsSaved] = useState(false);
  const [error, setError] = useState<string | undefined>();
  const tester = useTest('webpush', props.onTested);

  async function save(event: Event) {
    event.preventDefault();
    setIsBusy(true);
    setIsSaved(false);
    setError(undefined);
    try {
      const answer = await client.send<ChannelResponse>(
        'PUT',
        '/v1/notifications/channels/webpush',
        { events },
      );
      setIsSaved(true);
      props.onChanged(answer.channel);
    } catch (failure) {
      setError(messageOf(failure));
    } finally {
      setIsBusy(false);
    }
  }

  return (
    <form
      aria-label={`${TITLES.webpush} settings`}
      aria-busy={isBusy}
      onSubmit={(event) => void save(event)}
    >
      <EventChoices
        events={events}
        onChange={(next) => {
          setEvents(next);
          setIsSaved(false);
        }}
      />
      <div class="button-row">
        <button type="submit" class="primary" disabled={isBusy}>
          Save
        </button>
        <button type="button" disabled={tester.isTesting} onClick={() => void tester.test()}>
          Test
        </button>
        {isSaved ? <output class="muted">Saved.</output> : null}
      </div>
      <TestResult result={tester.result} />
      <ErrorNotice message={error} />
    </form>
  );
}

// The devices are the channel: the first one subscribed makes it, removing the last removes it.
function WebPushChannel(props: {
  channel: ChannelOf<'webpush'> | undefined;
  onChanged: () => void;
  onSaved: (channel: Channel) => void;
  onTested: () => void;
}) {
  return (
    <>
      <PushDevices onChanged={props.onChanged} />
      {props.channel ? (
        <WebPushEvents
          channel={props.channel}
          onChanged={props.onSaved}
          onTested={props.onTested}
        />
      ) : null}
    </>
  );
}

const FORM_TYPES: FormType[] = ['ntfy', 'webhook', 'email'];

export function NotificationChannels(props: { timeZone: string; onTested: () => void }) {
  const { client } = useApp();
  const list = useResource('notification-channels', () =>
    client.get<ChannelsListResponse>('/v1/notifications/channels'),
  );
  // Answers of a PUT, a confirmation or a DELETE, shown at once: `null` is a removed channel.
  const [changed, setChanged] = useState<Partial<Record<ChannelType, Channel | null>>>({});
  useEffect(() => setChanged({}), [list.data]);

  const channelOf = (type: ChannelType): Channel | undefined => {
    const latest = changed[type];
    if (latest !== undefined) return latest ?? undefined;
    return list.data?.channels.find((channel) => channel.type === type);
  };
  const setChannel = (type: ChannelType) => (channel: Channel | undefined) =>
    setChanged((current) => ({ ...current, [type]: channel ?? null }));

  if (!list.data) {
    return list.error ? <ErrorNotice message={list.error} /> : <Loading what="your channels" />;
  }
  const email = channelOf('email');
  const telegram = channelOf('telegram');
  const webpush = channelOf('webpush');
  return (
    <>
      {FORM_TYPES.map((type) => (
        <ChannelSection key={type} type={type} channel={channelOf(type)}>
          <ChannelForm
            type={type}
            channel={channelOf(type)}
            onChanged={setChannel(type)}
            onTested={props.onTested}
          />
          {type === 'email' && email?.type === 'email' && !email.isConfirmed ? (
            <ConfirmEmail to={email.to} onConfirmed={setChannel('email')} />
          ) : null}
        </ChannelSection>
      ))}
      <ChannelSection type="telegram" channel={telegram}>
        <TelegramLink
          channel={telegram?.type === 'telegram' ? telegram : undefined}
          timeZone={props.timeZone}
          onChanged={list.reload}
          onTested={props.onTested}
        />
      </ChannelSection>
      <ChannelSection type="webpush" channel={webpush}>
        <WebPushChannel
          channel={webpush?.type === 'webpush' ? webpush : undefined}
          onChanged={list.reload}
          onSaved={setChannel('webpush')}
          onTested={props.onTested}
        />
      </ChannelSection>
    </>
  );
}
