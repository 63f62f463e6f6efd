// Calls a task now and then every `intervalMs` after each call has settled,
// so a slow server never has two polls in flight; stop() ends it, and a call
// in flight when it stopped schedules nothing. `intervalMs` may be a function,
// asked after each call (to poll faster while something is under way).

export interface Poller {
  start(): void;
  stop(): void;
  readonly running: boolean;
}

export function createPoller(task: () => Promise<void>, intervalMs: number | (() => number)): Poller {
  let timer: ReturnType<typeof setTimeout> | null = null;
  let generation = 0; // bumped by start and stop: a call from an earlier start does not schedule the next
  let running = false;

  const tick = async (gen: number) => {
    timer = null;
    try {
      await task();
    } catch {
      // The task reports its own failures; polling goes on.
    }
    if (running && gen === generation)
      timer = setTimeout(() => void tick(gen), typeof intervalMs === 'function' ? intervalMs() : intervalMs);
  };

  return {
    start() {
      if (running) return;
      running = true;
      void tick(++generation);
    },
    stop() {
      running = false;
      ++generation;
      if (timer !== null) clearTimeout(timer);
      timer = null;
    },
    get running() {
      return running;
    },
  };
}
