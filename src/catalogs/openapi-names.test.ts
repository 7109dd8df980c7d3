import { describe, expect, it } from 'vitest';
import { catalogIdFromTitle, kebab } from './openapi-names.js';

describe('names', () => {
  it.each([
    ['listTasks', 'list-tasks'],
    ['getHTTPStatus', 'get-http-status'],
    ['list_tasks', 'list-tasks'],
    ['tasks.list', 'tasks-list'],
    ['v2GetUser', 'v2-get-user'],
    ['Créer tâche', 'creer-tache'],
    ['--a--b--', 'a-b'],
  ])('kebab(%j) is %j', (input, expected) => {
    expect(kebab(input, true)).toBe(expected);
  });

  it.each([
    ['Tasks API', 'tasks-api'],
    ['GitHub REST API v3', 'github-rest-api-v3'],
    ['  Ünïcode  Thing!! ', 'unicode-thing'],
    ['X', 'catalog-x'],
    ['日本語', 'catalog'],
    ['a'.repeat(70), 'a'.repeat(64)],
    [`${'word-'.repeat(12)}longword`, `${'word-'.repeat(12)}long`],
  ])('catalogIdFromTitle(%j) is %j', (title, expected) => {
    const id = catalogIdFromTitle(title);
    expect(id).toBe(expected);
    expect(id).toMatch(/^[a-z0-9-]{2,64}$/);
    expect(id).not.toMatch(/^-|-$/);
  });
});
