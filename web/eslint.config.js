// Lint for the editor (`npm run lint`, no warnings allowed): ESLint's and
// typescript-eslint's recommended rules, and the Rules of React from
// eslint-plugin-react-hooks (hooks, effect dependencies, and the React
// Compiler's checks such as no setState straight in an effect).
import js from '@eslint/js';
import reactHooks from 'eslint-plugin-react-hooks';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

export default defineConfig([
  { ignores: ['dist/', 'node_modules/', 'e2e-results/'] },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    files: ['**/*.{ts,tsx}'],
    extends: [reactHooks.configs.flat.recommended],
  },
  {
    rules: {
      // `const { nodes, edges, ...rest } = json` names what it leaves out: that is not an unused variable.
      '@typescript-eslint/no-unused-vars': ['error', { ignoreRestSiblings: true }],
    },
  },
]);
