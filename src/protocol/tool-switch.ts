/**
 * Which tool groups one connection lists. Every tool is callable whatever is listed; listing only
 * decides what an agent pays for in `tools/list`. Enabling a group tells the client the list changed.
 */
export class ToolSwitch {
  private readonly active: Set<string>;
  /** Called after the listing changed (a server sends notifications/tools/list_changed). */
  onChange: (() => void) | undefined;

  private readonly initial: readonly string[];

  constructor(
    /** Group → the names of its tools (a tool may be in several groups). */
    private readonly groups: ReadonlyMap<string, readonly string[]>,
    initial: Iterable<string>,
  ) {
    this.initial = [...initial];
    this.active = new Set(this.initial);
  }

  /**
   * Back to the groups it was built with, without telling anyone: for a server that serves one
   * stateless request after another, where what one request listed must not carry over.
   */
  reset(): void {
    this.active.clear();
    for (const group of this.initial) this.active.add(group);
  }

  listed(tool: string): boolean {
    for (const group of this.active) if (this.groups.get(group)?.includes(tool)) return true;
    return false;
  }

  /** Lists more groups; answers which were enabled now and which names are not groups. */
  enable(names: readonly string[]): { enabled: string[]; unknown: string[] } {
    const unknown = names.filter((n) => !this.groups.has(n));
    const enabled = names.filter((n) => this.groups.has(n) && !this.active.has(n));
    for (const n of enabled) this.active.add(n);
    if (enabled.length > 0) this.onChange?.();
    return { enabled, unknown };
  }

  describe(): { group: string; listed: boolean; tools: string[] }[] {
    return [...this.groups].map(([group, tools]) => ({
      group,
      listed: this.active.has(group),
      tools: [...tools],
    }));
  }
}
