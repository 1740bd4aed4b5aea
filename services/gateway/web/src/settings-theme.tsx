import { useState } from 'preact/hooks';

// The colour scheme: the system's by default, or one the user chose on this device. It is kept
// in this browser's localStorage rather than on the server, as a phone and a laptop in different
// light may want different ones.
type ThemeChoice = 'system' | 'light' | 'dark';

const THEME_ITEM = 'jarvis.theme';

const CHOICES: { value: ThemeChoice; label: string }[] = [
  { value: 'system', label: 'As the system' },
  { value: 'light', label: 'Light' },
  { value: 'dark', label: 'Dark' },
];

function storage(): Storage | undefined {
  try {
    return window.localStorage;
  } catch {
    // Storage disabled (some private modes): the choice then lasts only as long as the page.
    return undefined;
  }
}

function isThemeChoice(value: string | null | undefined): value is ThemeChoice {
  return value === 'system' || value === 'light' || value === 'dark';
}

function loadThemeChoice(): ThemeChoice {
  const stored = storage()?.getItem(THEME_ITEM);
  return isThemeChoice(stored) ? stored : 'system';
}

// styles.css reads data-theme on <html>: none follows prefers-color-scheme.
function applyTheme(choice: ThemeChoice): void {
  const root = document.documentElement;
  if (choice === 'system') delete root.dataset.theme;
  else root.dataset.theme = choice;
}

// public/theme.js set the stored choice before the first frame; this follows a change made in
// another tab of the app, so two open tabs do not disagree.
export function followThemeChanges(): void {
  window.addEventListener('storage', (event) => {
    if (event.key === THEME_ITEM) applyTheme(loadThemeChoice());
  });
}

export function ThemeSetting() {
  const [choice, setChoice] = useState(loadThemeChoice);

  function choose(next: ThemeChoice) {
    setChoice(next);
    if (next === 'system') storage()?.removeItem(THEME_ITEM);
    else storage()?.setItem(THEME_ITEM, next);
    applyTheme(next);
  }

  return (
    <section class="card settings" aria-labelledby="theme-title">
      <h2 id="theme-title">Appearance</h2>
      <fieldset class="choices">
        <legend class="visually-hidden">Colour scheme on this device</legend>
        {CHOICES.map((option) => (
          <label key={option.value} class="check">
            <input
              type="radio"
              name="theme"
              value={option.value}
              checked={choice === option.value}
              onChange={() => choose(option.value)}
            />
            {option.label}
          </label>
        ))}
      </fieldset>
      <p class="muted">Kept in this browser: each of your devices has its own.</p>
    </section>
  );
}
