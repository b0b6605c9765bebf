/**
 * Coalesce runs fn once, delayMs after the first of any number of asks in
 * that time: many job changes in a burst become one refresh.
 */
export class Coalesce {
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly delayMs: number,
    private readonly fn: () => void,
  ) {}

  /** ask runs fn after the delay, unless a run is already due. */
  ask(): void {
    if (this.timer) {
      return;
    }
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.fn();
    }, this.delayMs);
  }

  /** pending says a run is due. */
  get pending(): boolean {
    return this.timer !== undefined;
  }

  /** dispose drops a run that is due. */
  dispose(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}
