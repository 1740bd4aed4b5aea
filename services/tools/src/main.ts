import { openBlobStore } from '@jarvis/bus';
import {
  type ChannelType,
  DOCUMENT_CONTENT_MAX_CHARS,
  UPLOADS_BUCKET,
  UPLOADS_TTL_MS,
} from '@jarvis/contracts';
import { createOutboundGuard, startGuardedProxy } from '@jarvis/net-guard';
import { bootService, createRateAdmitter } from '@jarvis/service-kit';
import type { Logger } from '@jarvis/telemetry';
import { BrowserPool } from './browser/browser-pool';
import {
  createBrowserActTool,
  createBrowserOpenTool,
  createBrowserScreenshotTool,
  createSavePageTool,
} from './browser/browser-tools';
import { closePagesWhenRunsEnd } from './browser/run-end-watcher';
import { registerScreenshotHandlers } from './browser/screenshots-handlers';
import { startScreenshotPruner } from './browser/screenshots-pruner';
import { registerDocumentImportHandlers } from './documents/import-handlers';
import { loadEnv } from './env';
import { registerHandlers } from './handlers';
import type { ChannelSender } from './notifications/channel';
import { installSmtpFromEnv } from './notifications/email-transport';
import { createNotifyTool } from './notifications/notify-tool';
import { registerDeliveryHandlers } from './notifications/pipeline/delivery-handlers';
import { startNotificationPipeline } from './notifications/pipeline/pipeline';
import { registerPushHandlers } from './notifications/push/push-handlers';
import { loadVapidKeys, vapidSubject } from './notifications/push/vapid-keys';
import { loadSecretBox } from './notifications/secret-box';
import { createEmailSender } from './notifications/senders/email';
import { createNtfySender } from './notifications/senders/ntfy';
import { createWebPushSender } from './notifications/senders/web-push';
import { createWebhookSender } from './notifications/senders/webhook';
import { registerSettingsHandlers } from './notifications/settings-handlers';
import { createTelegramBot } from './notifications/telegram/bot';
import { registerTelegramHandlers } from './notifications/telegram/link-handlers';
import { createTelegramSender } from './notifications/telegram/sender';
import { startTelegram } from './notifications/telegram/start-telegram';
import { ToolRegistry } from './registry';
import { createSandbox, type Sandbox } from './sandbox/sandbox';
import { createToolsMetrics } from './tools-metrics';
import { createWebFetchTool } from './web/web-fetch';
import { createWebSearchTool, webSearchAllowedHosts, webSearchConfig } from './web/web-search';
import { createRunCodeTool } from './workspace/run-code-tool';
import { registerWorkspaceExportHandler } from './workspace/workspace-export-handler';
import { registerWorkspaceHandlers } from './workspace/workspace-handlers';

const env = loadEnv();

// A failed send is retried after 5 s, then twice as long each time up to 10 minutes: with the
// default 10 attempts a channel may stay down about half an hour before a delivery fails.
const RETRY = { baseDelayMs: 5_000, maxDelayMs: 10 * 60_000 };
// The sweeper looks every 5 s for retries and held deliveries that are due, and takes a queued
// delivery untouched for a minute as one whose work message was lost.
const SWEEP_INTERVAL_MS = 5_000;
const OVERDUE_MS = 60_000;
// Saving an email channel reaches its SMTP server within the gateway's 5 s wait for an answer,
// so that the user reads why it failed rather than a gateway timeout.
const SAVE_SMTP_TIMEOUT_MS = 4_000;
// SearXNG gives its engines 3 s by default, and the APIs answer within one or two: a search still
// waiting past this will not answer.
const WEB_SEARCH_TIMEOUT_MS = 15_000;
// Memory chunks and indexes an imported document's text: a long one takes seconds on a small,
// busy server, as the gateway's JSON ingest allows for.
const DOCUMENT_INGEST_TIMEOUT_MS = 60_000;
// Screenshots are kept for days: looking for expired ones hourly keeps them at most an hour past.
const SCREENSHOT_PRUNE_INTERVAL_MS = 3_600_000;
const MIB = 1_048_576;

const sandboxLimits = {
  cpuSeconds: env.SANDBOX_CPU_SECONDS,
  wallMs: env.SANDBOX_WALL_MS,
  memoryBytes: env.SANDBOX_MEMORY_MB * MIB,
  processes: env.SANDBOX_PROCESSES,
  outputBytes: env.SANDBOX_OUTPUT_BYTES,
  diskBytes: env.SANDBOX_DISK_MB * MIB,
};
const workspaceLimits = {
  fileMaxBytes: env.WORKSPACE_FILE_MAX_MB * MIB,
  quotaBytes: env.WORKSPACE_QUOTA_MB * MIB,
};

// run_code's sandbox, or undefined when it is off or cannot be made here (bwrap missing, user
// namespaces refused): the model is then never offered a run_code that can only fail, and the
// log says why.
async function startSandbox(logger: Logger): Promise<Sandbox | undefined> {
  if (!env.SANDBOX_ENABLED) return undefined;
  try {
    return await createSandbox({
      bwrap: env.SANDBOX_BWRAP,
      rootDir: env.SANDBOX_DIR,
      user: env.SANDBOX_USER,
      limits: sandboxLimits,
      maxConcurrent: env.SANDBOX_MAX_CONCURRENT,
      logger,
    });
  } catch (error) {
    logger.warn({ err: error }, 'the code sandbox cannot run here: no run_code tool');
    return undefined;
  }
}

await bootService(
  {
    name: 'tools',
    env,
    port: env.HTTP_PORT,
    database: {
      env,
      schema: 'tools',
      migrations: new URL('../migrations', import.meta.url),
    },
    // Telegram turns count against the same Redis windows as POST /v1/chat.
    redis: { url: env.REDIS_URL },
  },
  async ({ bus, pool, redis, logger, metrics }) => {
    const toolsMetrics = createToolsMetrics(metrics);
    // One guard for every user-given destination: web_fetch's pages and the channels' servers.
    const guard = createOutboundGuard(env.OUTBOUND_ALLOWED_HOSTS);
    // Before anything reads a channel: a bad JARVIS_SECRET_KEY stops the start with its reason.
    const box = await loadSecretBox(env, logger);
    const installSmtp = installSmtpFromEnv(env);
    // Made on the first start and kept in the database (sealed with the same box).
    const vapid = await loadVapidKeys({ pool, box, logger }, vapidSubject(env));
    const telegram = createTelegramBot({
      token: env.TELEGRAM_BOT_TOKEN,
      apiRoot: env.TELEGRAM_API_ROOT,
      guard,
      logger,
    });
    const senders = new Map<ChannelType, ChannelSender>(
      [
        createNtfySender({ guard }),
        createWebhookSender({ guard }),
        createEmailSender({ guard, installSmtp, timeoutMs: env.NOTIFY_SEND_TIMEOUT_MS }),
        createTelegramSender({ telegram, pool }),
        createWebPushSender({ pool, guard, vapid, logger }),
      ].map((sender) => [sender.type, sender]),
    );
    const delivery = {
      pool,
      box,
      senders,
      logger,
      sendTimeoutMs: env.NOTIFY_SEND_TIMEOUT_MS,
      maxAttempts: env.NOTIFY_MAX_ATTEMPTS,
      retry: RETRY,
      metrics: toolsMetrics,
    };

    const registry = new ToolRegistry();
    registry.register(
      createWebFetchTool({
        guard,
        maxBytes: env.WEB_FETCH_MAX_BYTES,
        timeoutMs: env.WEB_FETCH_TIMEOUT_MS,
      }),
    );
    // Registered only when a provider is configured: the model is never offered a search that
    // can only fail.
    const searchConfig = webSearchConfig(env);
    if (searchConfig) {
      registry.register(
        createWebSearchTool({
          config: searchConfig,
          guard: createOutboundGuard(
            webSearchAllowedHosts(env.OUTBOUND_ALLOWED_HOSTS, searchConfig),
          ),
          maxResults: env.WEB_SEARCH_MAX_RESULTS,
          timeoutMs: WEB_SEARCH_TIMEOUT_MS,
        }),
      );
    }
    // Every request Chromium makes goes through this proxy, which asks the same guard at connect
    // time; Chromium itself starts on the first browser call.
    const browserProxy = await startGuardedProxy({ guard, logger });
    const browser = new BrowserPool({
      executablePath: env.BROWSER_EXECUTABLE,
      user: env.BROWSER_USER,
      maxPages: env.BROWSER_MAX_PAGES,
      pageTimeoutMs: env.BROWSER_PAGE_TIMEOUT_MS,
      pageMaxBytes: env.BROWSER_PAGE_MAX_BYTES,
      idleMs: env.BROWSER_IDLE_MS,
      proxy: browserProxy,
      logger,
    });
    const browserTools = { pool: browser, guard };
    registry.register(createBrowserOpenTool(browserTools));
    registry.register(createBrowserScreenshotTool({ ...browserTools, db: pool }));
    registry.register(createBrowserActTool(browserTools));
    registry.register(
      createSavePageTool({ ...browserTools, bus, ingestTimeoutMs: DOCUMENT_INGEST_TIMEOUT_MS }),
    );
    closePagesWhenRunsEnd(bus, browser);
    registry.register(
      createNotifyTool({ bus, pool, perHour: env.NOTIFY_PER_HOUR, metrics: toolsMetrics }),
    );
    const sandbox = await startSandbox(logger);
    if (sandbox) {
      registry.register(
        createRunCodeTool({
          sandbox,
          pool,
          limits: { sandbox: sandboxLimits, workspace: workspaceLimits },
          logger,
        }),
      );
    }
    // Uploads and downloads of documents and workspace files pass through it.
    const uploads = await openBlobStore(bus, UPLOADS_BUCKET, { ttlMs: UPLOADS_TTL_MS });
    registerHandlers(bus, registry, toolsMetrics);
    registerSettingsHandlers({
      bus,
      pool,
      box,
      guard,
      logger,
      installSmtp,
      smtpTimeoutMs: SAVE_SMTP_TIMEOUT_MS,
    });
    registerDeliveryHandlers({ ...delivery, bus });
    registerPushHandlers({ bus, pool, guard, logger, publicKey: vapid.publicKey });
    registerTelegramHandlers({ bus, pool, telegram });
    registerScreenshotHandlers({ bus, pool });
    registerWorkspaceHandlers({ bus, pool, uploads, limits: workspaceLimits, logger });
    registerWorkspaceExportHandler({ bus, pool, uploads });
    registerDocumentImportHandlers({
      bus,
      uploads,
      limits: {
        maxPages: env.DOCUMENT_MAX_PAGES,
        timeoutMs: env.DOCUMENT_EXTRACT_TIMEOUT_MS,
        memoryMb: env.DOCUMENT_EXTRACT_MEMORY_MB,
        // As much as memory takes as one document.
        maxTextChars: DOCUMENT_CONTENT_MAX_CHARS,
        maxUnzippedBytes: env.DOCUMENT_MAX_UNZIPPED_BYTES,
      },
      ingestTimeoutMs: DOCUMENT_INGEST_TIMEOUT_MS,
      logger,
    });
    const screenshotPruner = startScreenshotPruner({
      pool,
      logger,
      retentionDays: env.SCREENSHOT_RETENTION_DAYS,
      intervalMs: SCREENSHOT_PRUNE_INTERVAL_MS,
    });
    const pipeline = await startNotificationPipeline({
      ...delivery,
      bus,
      publicUrl: env.PUBLIC_URL,
      sweepIntervalMs: SWEEP_INTERVAL_MS,
      overdueMs: OVERDUE_MS,
    });
    const telegramChat = await startTelegram({
      telegram,
      bus,
      pool,
      redis,
      logger,
      databaseUrl: env.DATABASE_URL,
      namespace: env.NATS_NAMESPACE,
      admitRate: createRateAdmitter(redis, logger),
      limits: {
        perMinute: env.RATE_LIMIT_PER_MINUTE,
        chatPerMinute: env.CHAT_RATE_LIMIT_PER_MINUTE,
      },
      submitTimeoutMs: env.SERVICE_TIMEOUT_MS,
      turnTimeoutMs: env.TURN_TIMEOUT_MS,
    });
    // Intake stops first (Telegram's poller, then the event consumer), and deliveries in hand
    // finish, before the bus and the pool close.
    return {
      async stop() {
        await telegramChat.stop();
        await pipeline.stop();
        await screenshotPruner.stop();
        // No tool call is coming any more: Chromium and its proxy go.
        await browser.close();
        await browserProxy.close();
      },
    };
  },
);
