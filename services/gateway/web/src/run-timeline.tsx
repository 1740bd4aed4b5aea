import type { RunStep } from '@jarvis/contracts';
import { formatDuration } from './format';
import { layoutTimeline, percent } from './run-timeline-layout';

// A run's steps on one time axis: each bar starts where its step started and is as wide as it
// took, coloured by kind. The bars are drawing only; each row's text says the same for screen
// readers. Positions go through CSS custom properties that Preact sets with the CSSOM
// (style.setProperty), which the content security policy (style-src 'self', no inline styles)
// does not govern: a style attribute in markup would be refused.
export function RunTimeline({ steps }: { steps: readonly RunStep[] }) {
  const { spanMs, bars } = layoutTimeline(steps);
  if (bars.length === 0) return null;
  return (
    <figure class="timeline">
      <ol class="timeline-rows" aria-label="Timeline">
        {bars.map(({ step, offsetMs, startPercent, widthPercent }) => {
          const isFailed = step.status === 'error';
          return (
            <li key={step.id} class="timeline-row">
              <span class="timeline-label">
                <span class="timeline-name">{step.name}</span>{' '}
                <span class="muted">
                  {step.kind}
                  {isFailed ? ', failed' : ''}: {formatDuration(step.durationMs)}, at +
                  {formatDuration(offsetMs)}
                </span>
              </span>
              <span class="timeline-track" aria-hidden="true">
                <span
                  class={`timeline-bar timeline-${step.kind}${isFailed ? ' timeline-failed' : ''}`}
                  style={{ '--start': percent(startPercent), '--width': percent(widthPercent) }}
                />
              </span>
            </li>
          );
        })}
      </ol>
      <figcaption class="muted">
        {bars.length} {bars.length === 1 ? 'step' : 'steps'} over {formatDuration(spanMs)}
      </figcaption>
    </figure>
  );
}
