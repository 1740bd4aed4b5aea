// The colour scheme chosen on this device, on <html> before the body is parsed: a classic script
// in <head> runs before the first frame, while the app's module script runs only after parsing,
// and a frame may be painted in between (in the system's scheme: a flash). settings-theme.tsx
// keeps the choice under this same key; the CSP allows no inline script, hence a file.
try {
  const theme = window.localStorage.getItem('jarvis.theme');
  if (theme === 'light' || theme === 'dark') document.documentElement.dataset.theme = theme;
} catch {
  // Storage disabled (some private modes): the system's scheme, as settings-theme.tsx does.
}
