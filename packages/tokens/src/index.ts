export * from './count-tokens';
export * from './tokenizer-family';
