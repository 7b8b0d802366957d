// Lint of src/ (run by `npm run lint` and as a step of `npm test`): type-aware,
// and only what the type checker cannot say — a neverthrow Result dropped on
// the floor. Formatting is not linted.
import tseslint from 'typescript-eslint';
import { mustUseResult } from './scripts/lint-rules/mustUseResult.js';

export default tseslint.config({
  files: ['src/**/*.ts'],
  languageOptions: {
    parser: tseslint.parser,
    parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
  },
  linterOptions: { reportUnusedDisableDirectives: 'error' },
  plugins: { neverthrow: { rules: { 'must-use-result': mustUseResult } } },
  rules: { 'neverthrow/must-use-result': 'error' },
});
