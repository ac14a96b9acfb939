// One job: every promise is awaited or handled. Storage is async (src/storage/types.ts), so a call
// left without await would run outside its transaction or lose its error; tsc does not see that.
import tseslint from 'typescript-eslint';

export default [
  {
    files: ['src/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts'],
    languageOptions: { parser: tseslint.parser, parserOptions: { project: './tsconfig.test.json', tsconfigRootDir: import.meta.dirname } },
    plugins: { '@typescript-eslint': tseslint.plugin },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
    },
  },
];
