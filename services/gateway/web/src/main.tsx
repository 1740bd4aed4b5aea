import { render } from 'preact';
import { App } from './app';
import { followThemeChanges } from './settings-theme';
import { registerServiceWorker } from './sw-register';
import './styles.css';

followThemeChanges();
const root = document.getElementById('app');
if (root) render(<App />, root);
registerServiceWorker();
