-- Notifications: each user's channels, quiet hours and the history of what was sent. Secrets
-- (tokens, passwords, webhook secrets) are sealed with the install's secret key, which is never
-- in the database: a dump alone does not give them away.

CREATE TABLE tools.notification_channels (
  user_id uuid NOT NULL,
  type text NOT NULL CHECK (type IN ('ntfy', 'email', 'webhook', 'telegram')),
  -- What is not secret: ntfy {url, topic, priority, clickUrl?}; webhook {url, format};
  -- email {to, smtp?: {host, port, security, user?, from?}}; telegram {chatId, username}.
  config jsonb NOT NULL,
  -- AES-256-GCM sealed JSON of the secrets ({token} | {secret} | {smtpPassword}); null: none.
  secrets bytea,
  -- The notification kinds this channel gets.
  events text[] NOT NULL,
  -- false only for email through the install's SMTP whose address is not confirmed yet.
  is_confirmed boolean NOT NULL DEFAULT true,
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (user_id, type)
);
-- A Telegram chat is linked to one user at most.
CREATE UNIQUE INDEX notification_channels_telegram_chat
  ON tools.notification_channels ((config ->> 'chatId')) WHERE type = 'telegram';

CREATE TABLE tools.notification_settings (
  user_id uuid PRIMARY KEY,
  -- The user's zone as the gateway last told it: quiet hours and Telegram turns are told in it.
  time_zone text NOT NULL DEFAULT 'UTC',
  -- Wall-clock HH:MM; both null: no quiet hours.
  quiet_start text,
  quiet_end text,
  updated_at timestamptz NOT NULL DEFAULT now(),
  CHECK ((quiet_start IS NULL) = (quiet_end IS NULL))
);

CREATE TABLE tools.notification_deliveries (
  id uuid PRIMARY KEY,
  user_id uuid NOT NULL,
  -- The event told (the user-event's message id, a note's or a test's own id): one delivery per
  -- event and channel, however often the event is seen.
  event_id text NOT NULL,
  kind text NOT NULL,
  channel text NOT NULL CHECK (channel IN ('ntfy', 'email', 'webhook', 'telegram')),
  title text NOT NULL,
  -- What is sent: {text, occurredAt, url?, approvalId?}.
  content jsonb NOT NULL,
  is_urgent boolean NOT NULL,
  status text NOT NULL CHECK (status IN ('queued', 'held', 'retrying', 'sent', 'failed')),
  attempts integer NOT NULL DEFAULT 0,
  -- held or retrying: when the next attempt is due.
  next_attempt_at timestamptz,
  error text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  sent_at timestamptz,
  UNIQUE (user_id, event_id, channel)
);
CREATE INDEX notification_deliveries_history
  ON tools.notification_deliveries (user_id, created_at DESC);
-- The sweeper's look for deliveries whose queue message was lost.
CREATE INDEX notification_deliveries_pending
  ON tools.notification_deliveries (next_attempt_at) WHERE status IN ('queued', 'held', 'retrying');

-- A code mailed to confirm an address for the install's SMTP: only its hash is kept.
CREATE TABLE tools.email_confirmations (
  user_id uuid PRIMARY KEY,
  address text NOT NULL,
  code_hash bytea NOT NULL,
  expires_at timestamptz NOT NULL,
  attempts integer NOT NULL DEFAULT 0
);

-- Single-use codes that link a Telegram chat (/start CODE): only their hash is kept.
CREATE TABLE tools.telegram_link_codes (
  code_hash bytea PRIMARY KEY,
  user_id uuid NOT NULL,
  expires_at timestamptz NOT NULL,
  used_at timestamptz
);
CREATE INDEX telegram_link_codes_user ON tools.telegram_link_codes (user_id);
