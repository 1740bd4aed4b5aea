-- Web Push: the install's VAPID key pair and the browsers (devices) each user subscribed. Both
-- live in the tools schema so that a backup of it keeps them: a new key pair would make every
-- device subscribe again.

-- One row: the key pair, made on the first start. The private key is sealed with the install's
-- secret key, like the channels' secrets.
CREATE TABLE tools.vapid_keys (
  id smallint PRIMARY KEY DEFAULT 1 CHECK (id = 1),
  -- base64url of the uncompressed P-256 point (65 bytes): the browsers' applicationServerKey.
  public_key text NOT NULL,
  -- AES-256-GCM sealed JSON {secret: <base64url private key>}.
  private_key bytea NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE tools.push_subscriptions (
  id uuid PRIMARY KEY,
  user_id uuid NOT NULL,
  -- The push service's URL for this browser: whoever holds it with the keys can push to it, so
  -- the API shows only its host.
  endpoint text NOT NULL,
  -- The browser's P-256 public key and 16-byte auth secret, base64url: the payload is encrypted
  -- to them (RFC 8291).
  p256dh text NOT NULL,
  auth text NOT NULL,
  device_name text,
  created_at timestamptz NOT NULL DEFAULT now(),
  -- The last push the service accepted; null: none yet.
  last_success_at timestamptz,
  UNIQUE (user_id, endpoint)
);

-- webpush is a channel like the others: its row holds the kinds it gets, its devices are above.
ALTER TABLE tools.notification_channels DROP CONSTRAINT notification_channels_type_check;
ALTER TABLE tools.notification_channels ADD CONSTRAINT notification_channels_type_check
  CHECK (type IN ('ntfy', 'email', 'webhook', 'telegram', 'webpush'));
ALTER TABLE tools.notification_deliveries DROP CONSTRAINT notification_deliveries_channel_check;
ALTER TABLE tools.notification_deliveries ADD CONSTRAINT notification_deliveries_channel_check
  CHECK (channel IN ('ntfy', 'email', 'webhook', 'telegram', 'webpush'));
