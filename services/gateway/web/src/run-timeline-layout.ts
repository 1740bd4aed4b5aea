import type { RunStep } from '@jarvis/contracts';

// Where each step of a run sits on its timeline, as percentages of the run's span: from the first
// step's start to the last one's end. Pure, so it is unit-tested; the view draws the bars.

type TimelineBar = {
  step: RunStep;
  // Milliseconds from the first step's start.
  offsetMs: number;
  // Percent of the span, from its left edge, and wide.
  startPercent: number;
  widthPercent: number;
};

export type TimelineLayout = { spanMs: number; bars: TimelineBar[] };

// A percentage as a CSS length, rounded: a bar is a few hundred pixels wide at most.
export function percent(value: number): string {
  return `${Math.round(value * 100) / 100}%`;
}

export function layoutTimeline(steps: readonly RunStep[]): TimelineLayout {
  const starts = steps.map((step) => Date.parse(step.startedAt));
  const origin = Math.min(...starts);
  const end = Math.max(...steps.map((step, index) => (starts[index] ?? origin) + step.durationMs));
  // A run whose steps all took 0 ms still shows them, side by side at the start.
  const spanMs = steps.length === 0 ? 0 : Math.max(end - origin, 1);
  const bars = steps.map((step, index) => {
    const offsetMs = (starts[index] ?? origin) - origin;
    const startPercent = Math.min((offsetMs / spanMs) * 100, 100);
    // Never past the right edge, however the clocks of two replicas disagreed.
    const widthPercent = Math.min((step.durationMs / spanMs) * 100, 100 - startPercent);
    return { step, offsetMs, startPercent, widthPercent };
  });
  return { spanMs, bars };
}
