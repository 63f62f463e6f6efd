import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import '@xyflow/react/dist/style.css';
import './styles/theme.css';
import './styles/app.css';
import './styles/node.css';
import { App } from './App';
import { startLocale } from './i18n';

startLocale();

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
