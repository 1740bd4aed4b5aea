import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDatabase, type TestDatabase } from './testing';

let database: TestDatabase;

// The queue under test is the embedded server's, whatever engine the rest of the suite runs on.
beforeAll(async () => {
  database = await startTestDatabase({ engine: 'embedded' });
});

afterAll(async () => {
  await database?.stop();
});

describe('the embedded server under concurrent connections', () => {
  it('answers every parameterised query with its own result', async () => {
    const pool = new pg.Pool({ connectionString: database.url, max: 8 });
    try {
      const answers = await Promise.all(
        Array.from({ length: 300 }, (_, n) =>
          pool.query<{ n: number; text: string }>(
            'SELECT $1::int AS n, $2::text AS text, pg_sleep(0)',
            [n, `value-${n}`],
          ),
        ),
      );
      answers.forEach((answer, n) => {
        expect(answer.rows).toEqual([{ n, text: `value-${n}`, pg_sleep: '' }]);
      });
    } finally {
      await pool.end();
    }
  });

  it('keeps a transaction to itself while other connections query', async () => {
    const pool = new pg.Pool({ connectionString: database.url, max: 6 });
    try {
      await pool.query('CREATE TABLE IF NOT EXISTS wire_counter (id int PRIMARY KEY, n int)');
      await pool.query(
        'INSERT INTO wire_counter VALUES (1, 0) ON CONFLICT (id) DO UPDATE SET n = 0',
      );
      // Read-modify-write in transactions: lost updates would show if they interleaved.
      await Promise.all(
        Array.from({ length: 40 }, async () => {
          const client = await pool.connect();
          try {
            await client.query('BEGIN');
            const { rows } = await client.query<{ n: number }>(
              'SELECT n FROM wire_counter WHERE id = $1',
              [1],
            );
            await client.query('UPDATE wire_counter SET n = $1 WHERE id = $2', [
              (rows[0]?.n ?? 0) + 1,
              1,
            ]);
            await client.query('COMMIT');
          } finally {
            client.release();
          }
        }),
      );
      const { rows } = await pool.query<{ n: number }>('SELECT n FROM wire_counter WHERE id = 1');
      expect(rows).toEqual([{ n: 40 }]);
    } finally {
      await pool.end();
    }
  });
});

// A minimal frontend that can stop halfway through an extended query, which `pg` never does
// but a client on a slow network effectively can (its messages arrive in several pieces).
class RawClient {
  private readonly socket: Socket;
  private buffer = Buffer.alloc(0);
  private waiting: (() => void) | undefined;

  private constructor(socket: Socket) {
    this.socket = socket;
    socket.on('data', (chunk: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, chunk]);
      this.waiting?.();
    });
  }

  static async connect(port: number): Promise<RawClient> {
    const socket = connect(port, '127.0.0.1');
    await once(socket, 'connect');
    const client = new RawClient(socket);
    const params = Buffer.from('user\0postgres\0database\0postgres\0\0');
    const startup = Buffer.alloc(8);
    startup.writeInt32BE(8 + params.length, 0);
    startup.writeInt32BE(196_608, 4);
    socket.write(Buffer.concat([startup, params]));
    await client.readUntil('Z');
    return client;
  }

  send(type: string, body: Buffer): void {
    const header = Buffer.alloc(5);
    header.write(type, 0);
    header.writeInt32BE(body.length + 4, 1);
    this.socket.write(Buffer.concat([header, body]));
  }

  parse(sql: string): void {
    this.send('P', Buffer.concat([Buffer.from(`\0${sql}\0`), Buffer.alloc(2)]));
  }

  bindExecuteSync(values: string[]): void {
    const parts = [Buffer.from('\0\0'), int16(0), int16(values.length)];
    for (const value of values) parts.push(int32(Buffer.byteLength(value)), Buffer.from(value));
    parts.push(int16(0));
    this.send('B', Buffer.concat(parts));
    this.send('E', Buffer.concat([Buffer.from('\0'), int32(0)]));
    this.send('S', Buffer.alloc(0));
  }

  // Messages up to and including the first of `type`.
  async readUntil(type: string): Promise<{ type: string; body: Buffer }[]> {
    const messages: { type: string; body: Buffer }[] = [];
    for (;;) {
      while (this.buffer.length >= 5) {
        const length = this.buffer.readInt32BE(1);
        if (this.buffer.length < length + 1) break;
        const message = {
          type: String.fromCharCode(this.buffer[0] ?? 0),
          body: this.buffer.subarray(5, length + 1),
        };
        this.buffer = this.buffer.subarray(length + 1);
        messages.push(message);
        if (message.type === type) return messages;
      }
      await new Promise<void>((resolve) => {
        this.waiting = resolve;
      });
    }
  }

  close(): void {
    this.socket.destroy();
  }
}

function int16(value: number): Buffer {
  const buffer = Buffer.alloc(2);
  buffer.writeInt16BE(value, 0);
  return buffer;
}

function int32(value: number): Buffer {
  const buffer = Buffer.alloc(4);
  buffer.writeInt32BE(value, 0);
  return buffer;
}

function firstValue(messages: { type: string; body: Buffer }[]): string | undefined {
  const row = messages.find((message) => message.type === 'D');
  if (!row) return undefined;
  const length = row.body.readInt32BE(2);
  return row.body.subarray(6, 6 + length).toString();
}

describe('a query cycle split across network packets', () => {
  it('is not broken into by another connection', async () => {
    const port = Number(new URL(database.url).port);
    const slow = await RawClient.connect(port);
    const fast = await RawClient.connect(port);
    try {
      slow.parse('SELECT $1::int + 1');
      await slow.readUntil('1'); // ParseComplete: the statement is in the session now.
      fast.parse('SELECT 40 + 2');
      fast.bindExecuteSync([]);
      await new Promise((resolve) => setTimeout(resolve, 100));
      slow.bindExecuteSync(['5']);
      expect(firstValue(await slow.readUntil('Z'))).toBe('6');
      expect(firstValue(await fast.readUntil('Z'))).toBe('42');
    } finally {
      slow.close();
      fast.close();
    }
  });
});
