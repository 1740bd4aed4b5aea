import type { RunStep } from '@jarvis/contracts';
import { describe, expect, it } from 'vitest';
import { layoutTimeline, percent } from './run-timeline-layout';

const T0 = Date.parse('2026-11-28T09:00:00.000Z');

function step(seq: number, startMs: number, durationMs: number): RunStep {
  return {
    id: `00000000-0000-4000-8000-00000000000${seq}`,
    attempt: 1,
    seq,
    kind: 'tool',
    name: `step ${seq}`,
    status: 'ok',
    input: {},
    output: {},
    error: null,
    usage: { inputTokens: 0, outputTokens: 0 },
    costUsd: 0,
    startedAt: new Date(T0 + startMs).toISOString(),
    durationMs,
  };
}

describe('layoutTimeline', () => {
  it('places each step by its start and sizes it by its duration, over the whole span', () => {
    const { spanMs, bars } = layoutTimeline([step(1, 0, 100), step(2, 100, 300), step(3, 150, 50)]);

    expect(spanMs).toBe(400);
    expect(
      bars.map(({ offsetMs, startPercent, widthPercent }) => [
        offsetMs,
        startPercent,
        widthPercent,
      ]),
    ).toEqual([
      [0, 0, 25],
      [100, 25, 75],
      [150, 37.5, 12.5],
    ]);
  });

  it('takes the earliest start as the origin, whatever the order', () => {
    const { bars } = layoutTimeline([step(2, 500, 500), step(1, 0, 250)]);

    expect(bars.map((bar) => bar.startPercent)).toEqual([50, 0]);
  });

  it('shows steps of no duration at their place, without dividing by zero', () => {
    const { spanMs, bars } = layoutTimeline([step(1, 0, 0), step(2, 0, 0)]);

    expect(spanMs).toBe(1);
    expect(bars.every((bar) => bar.startPercent === 0 && bar.widthPercent === 0)).toBe(true);
  });

  it('has nothing to lay out for a run without steps', () => {
    expect(layoutTimeline([])).toEqual({ spanMs: 0, bars: [] });
  });
});

describe('percent', () => {
  it('rounds to two decimals', () => {
    expect(percent(100 / 3)).toBe('33.33%');
    expect(percent(25)).toBe('25%');
  });
});
