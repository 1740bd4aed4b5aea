import { render } from 'preact';
import { App } from './app';
import { applyStoredTheme } from './settings-theme';
import { registerServiceWorker } from './sw-register';
import './styles.css';

// Before the first render, so a chosen scheme is not drawn in the other one first.
applyStoredTheme();
const root = document.getElementById('app');
if (root) render(<App />, root);
registerServiceWorker();
