// The store's domain errors (see DomainErrors in src/engine/errors.ts).
// A module (so that the block below adds to DomainErrors rather than declaring a new module).
export {};

declare module '../engine/errors.js' {
  interface DomainErrors {
    storage_error: { message: string; details: string };
  }
}
