// A part of the app built when first needed, not at start: the store, the services over it and the
// protocol's file reads all load this way, so that a command that never needs them never opens them.

/** A value built on first use, once; a failed build is tried again on the next call. */
export function onFirstUse<T>(build: () => Promise<T>): {
  get: () => Promise<T>;
  built: () => Promise<T> | undefined;
} {
  let building: Promise<T> | undefined;
  return {
    get: () => {
      building ??= build();
      return building.catch((error: unknown) => {
        building = undefined;
        throw error;
      });
    },
    built: () => building,
  };
}
