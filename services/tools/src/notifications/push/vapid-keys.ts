import type { Pool } from '@jarvis/db';
import type { Logger } from '@jarvis/telemetry';
import webPush from 'web-push';
import type { SecretBox } from '../channel';
import { getVapidKeys, insertVapidKeysOnce, replaceVapidKeys } from './push-repository';

// The install's VAPID identity: what signs every push (RFC 8292), so that a push service accepts
// pushes to a browser only from the server the browser subscribed with.
export type VapidDetails = { subject: string; publicKey: string; privateKey: string };

// Without a contact of the operator's: push services use it only to reach whoever runs a server
// that misbehaves. Apple's refuses a localhost one, hence a reserved domain (RFC 2606).
const PLACEHOLDER_SUBJECT = 'mailto:admin@jarvis.invalid';

// VAPID_SUBJECT, else the install's public https URL, else the placeholder.
export function vapidSubject(env: {
  VAPID_SUBJECT?: string | undefined;
  PUBLIC_URL?: string | undefined;
}): string {
  if (env.VAPID_SUBJECT) return env.VAPID_SUBJECT;
  if (env.PUBLIC_URL?.startsWith('https://')) return new URL(env.PUBLIC_URL).origin;
  return PLACEHOLDER_SUBJECT;
}

// The key pair kept in tools.vapid_keys, made on the first start. The private key is sealed
// with the install's secret box (in the secrets' `secret` field, the box's format for a single
// secret), so that a database dump alone cannot sign pushes to the users' devices.
export async function loadVapidKeys(
  deps: { pool: Pool; box: SecretBox; logger: Logger },
  subject: string,
): Promise<VapidDetails> {
  const stored = await getVapidKeys(deps.pool);
  if (stored) {
    const privateKey = openPrivateKey(deps.box, stored.sealedPrivateKey);
    if (privateKey) return { subject, publicKey: stored.publicKey, privateKey };
    const fresh = makeKeys(deps.box);
    await replaceVapidKeys(deps.pool, fresh.stored);
    deps.logger.error(
      'the VAPID private key could not be opened (was JARVIS_SECRET_KEY changed?): a new key pair replaces it, and every device must subscribe to Web Push again',
    );
    return { subject, ...fresh.keys };
  }
  const fresh = makeKeys(deps.box);
  const kept = await insertVapidKeysOnce(deps.pool, fresh.stored);
  if (kept.publicKey === fresh.keys.publicKey) {
    deps.logger.info('made the VAPID key pair for Web Push');
    return { subject, ...fresh.keys };
  }
  // Another replica stored its pair first.
  const privateKey = openPrivateKey(deps.box, kept.sealedPrivateKey);
  if (!privateKey) throw new Error('the VAPID key pair another replica stored does not open');
  return { subject, publicKey: kept.publicKey, privateKey };
}

function makeKeys(box: SecretBox) {
  const keys = webPush.generateVAPIDKeys();
  return {
    keys,
    stored: { publicKey: keys.publicKey, sealedPrivateKey: box.seal({ secret: keys.privateKey }) },
  };
}

function openPrivateKey(box: SecretBox, sealed: Buffer): string | undefined {
  try {
    return box.open(sealed).secret;
  } catch {
    return undefined;
  }
}
