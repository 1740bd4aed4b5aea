import { describe, expect, it } from 'vitest';
import { metricSample } from './metric-sample';

const TEXT = `# HELP jarvis_turns_total Turns ended.
# TYPE jarvis_turns_total counter
jarvis_turns_total{kind="chat",outcome="completed",service="orchestrator"} 3
jarvis_turns_total{kind="chat",outcome="failed",service="orchestrator"} 1
jarvis_turn_duration_seconds_bucket{le="5",kind="chat",service="orchestrator"} 2 # {trace_id="0af7651916cd43dd8448eb211c80319c"} 1.2 1700000000.000
jarvis_turn_duration_seconds_count{kind="chat",service="orchestrator"} 2
jarvis_memory_summaries_total 4
# EOF
`;

describe('metricSample', () => {
  it('finds a series by its name and exact labels, in any order', () => {
    expect(
      metricSample(TEXT, 'jarvis_turns_total', {
        service: 'orchestrator',
        outcome: 'failed',
        kind: 'chat',
      }),
    ).toBe(1);
    expect(
      metricSample(TEXT, 'jarvis_turn_duration_seconds_bucket', {
        kind: 'chat',
        le: '5',
        service: 'orchestrator',
      }),
    ).toBe(2);
    expect(metricSample(TEXT, 'jarvis_memory_summaries_total', {})).toBe(4);
  });

  it('answers undefined for a series with fewer or other labels, or another name', () => {
    expect(metricSample(TEXT, 'jarvis_turns_total', { kind: 'chat' })).toBeUndefined();
    expect(
      metricSample(TEXT, 'jarvis_turn_duration_seconds_bucket', {
        kind: 'chat',
        service: 'orchestrator',
      }),
    ).toBeUndefined();
    expect(
      metricSample(TEXT, 'jarvis_turns_total', {
        kind: 'chat',
        outcome: 'cancelled',
        service: 'orchestrator',
      }),
    ).toBeUndefined();
    expect(
      metricSample(TEXT, 'jarvis_turns', {
        kind: 'chat',
        outcome: 'completed',
        service: 'orchestrator',
      }),
    ).toBeUndefined();
  });
});
