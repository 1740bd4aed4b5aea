import type { PGlite } from '@electric-sql/pglite';

// PGlite is one Postgres session. Several wire connections share it, so their messages must
// take turns — and not message by message: an extended-protocol query (Parse, Bind, Describe,
// Execute, Sync) uses the session's unnamed statement and portal, so another connection's Parse
// in between makes both queries fail or, worse, answer each other. pglite-socket's own queue
// (0.2.17) only keeps transactions together (upstream issue electric-sql/pglite#1046), so this
// queue gives a connection the session for a whole query cycle: until its Sync or simple Query
// is answered, and for as long as it holds a transaction open.

type Item = {
  handlerId: number;
  message: Uint8Array;
  onData: (data: Uint8Array) => void;
  resolve: (bytes: number) => void;
  reject: (error: unknown) => void;
};

const SYNC = 0x53; // 'S'
const QUERY = 0x51; // 'Q'
const PROTOCOL_3 = 196_608;

// The startup packet has no type byte: length, then the protocol version.
function isStartup(message: Uint8Array): boolean {
  if (message.length < 8) return false;
  const view = new DataView(message.buffer, message.byteOffset, message.byteLength);
  return view.getInt32(4) === PROTOCOL_3;
}

function endsCycle(message: Uint8Array): boolean {
  return isStartup(message) || message[0] === SYNC || message[0] === QUERY;
}

export class QueryCycleQueue {
  private readonly db: PGlite;
  private queue: Item[] = [];
  // The connection whose query cycle or transaction is under way.
  private owner: number | null = null;
  private isProcessing = false;
  // Statements of the server's own (maintenance), run between connections' query cycles.
  private chores: { sql: string; done: () => void }[] = [];
  // Whether any connection has sent something since the last check.
  private hasActivity = false;

  constructor(db: PGlite) {
    this.db = db;
  }

  enqueue(
    handlerId: number,
    message: Uint8Array,
    onData: (data: Uint8Array) => void,
  ): Promise<number> {
    return new Promise((resolve, reject) => {
      this.queue.push({ handlerId, message, onData, resolve, reject });
      void this.process();
    });
  }

  // Runs `sql` on the session as soon as no connection holds it (never inside a connection's
  // transaction), ahead of the queries waiting.
  runChore(sql: string): Promise<void> {
    return new Promise((resolve) => {
      this.chores.push({ sql, done: resolve });
      void this.process();
    });
  }

  // Whether connections sent anything since the last call.
  takeActivity(): boolean {
    const had = this.hasActivity;
    this.hasActivity = false;
    return had;
  }

  getQueueLength(): number {
    return this.queue.length;
  }

  clearQueueForHandler(handlerId: number): void {
    this.queue = this.queue.filter((item) => {
      if (item.handlerId !== handlerId) return true;
      item.reject(new Error('connection closed'));
      return false;
    });
  }

  // A connection that goes away mid-cycle or mid-transaction must not keep the session.
  async clearTransactionIfNeeded(handlerId: number): Promise<void> {
    if (this.owner !== handlerId) return;
    this.owner = null;
    try {
      if (this.db.isInTransaction()) await this.db.exec('ROLLBACK');
    } catch {
      // The database is closing: there is nothing left to roll back.
      return;
    }
    await this.process();
  }

  private async process(): Promise<void> {
    if (this.isProcessing) return;
    this.isProcessing = true;
    try {
      for (;;) {
        const chore = this.owner === null ? this.chores.shift() : undefined;
        if (chore) {
          // exec takes PGlite's own lock (runExclusive is not re-entrant).
          await this.db.exec(chore.sql).catch(() => {
            // A chore is best effort: the next one runs anyway.
          });
          chore.done();
          continue;
        }
        const index =
          this.owner === null ? 0 : this.queue.findIndex((item) => item.handlerId === this.owner);
        const item = index === -1 ? undefined : this.queue.splice(index, 1)[0];
        // Nothing queued, or the owner's next message has not arrived yet: others wait.
        if (!item) break;
        this.hasActivity = true;
        let bytes = 0;
        try {
          await this.db.runExclusive(() =>
            this.db.execProtocolRawStream(item.message, {
              onRawData: (data) => {
                bytes += data.length;
                item.onData(data);
              },
            }),
          );
        } catch (error) {
          this.owner = null;
          item.reject(error);
          continue;
        }
        this.owner = endsCycle(item.message) && !this.db.isInTransaction() ? null : item.handlerId;
        item.resolve(bytes);
      }
    } finally {
      this.isProcessing = false;
    }
  }
}
