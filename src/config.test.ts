import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from './config.js';

describe('loadConfig', () => {
  it("takes the user's directories from the environment it is given, not from the process's home", () => {
    const home = join('/', 'tmp', 'someone-else');
    const config = loadConfig({ env: { HOME: home, USERPROFILE: home }, cwd: join(home, 'project') });
    const user = config.sources.find((s) => s.kind === 'user');
    expect(user?.dir).toBe(join(home, '.workflowlookup', 'workflows'));
    if (process.platform === 'linux')
      expect(config.dataDir.startsWith(join(home, '.local', 'share'))).toBe(true);
  });
});
