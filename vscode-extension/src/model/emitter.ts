// A minimal event emitter shaped like vscode.EventEmitter, so the model
// needs no vscode import and the UI can subscribe the same way.

export interface Disposable {
  dispose(): void;
}

export type Event<T> = (listener: (e: T) => void) => Disposable;

export class Emitter<T> {
  private readonly listeners = new Set<(e: T) => void>();

  /** event subscribes a listener; dispose the result to unsubscribe. */
  readonly event: Event<T> = (listener) => {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  };

  /** fire calls every listener; one listener throwing does not stop the others. */
  fire(e: T): void {
    for (const l of [...this.listeners]) {
      try {
        l(e);
      } catch (err) {
        queueMicrotask(() => {
          throw err;
        });
      }
    }
  }

  dispose(): void {
    this.listeners.clear();
  }
}
