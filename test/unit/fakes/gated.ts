// Fakes whose answers the test holds back: to fill a pod controller's workers with requests under way, queue more
// work behind them, and see in which order it goes once they answer.
import { FakeHost } from './host.ts';
import { FakeProvider } from './provider.ts';
import type { V1Pod } from '@kubernetes/client-node';
import type { CreateOptions, PodNotice } from '../../../src/provider/pod.ts';

/** Held calls, released together. */
class Hold {
  #held: (() => void)[] = [];
  #open = false;

  /** Resolves at once when open, else once released. */
  wait(): Promise<void> {
    return this.#open ? Promise.resolve() : new Promise((r) => this.#held.push(r));
  }

  get count(): number { return this.#held.length; }

  /** Lets every held call and all later ones through. */
  open(): void {
    this.#open = true;
    for (const r of this.#held.splice(0)) r();
  }
}

/** A FakeHost whose status patches wait until `patches.open()`. */
export class GatedHost extends FakeHost {
  readonly patches = new Hold();
  override beforeStatusPatch = (): Promise<void> => this.patches.wait();
}

/** A FakeProvider whose createPod calls wait until `creates.open()`. */
export class GatedProvider extends FakeProvider {
  readonly creates = new Hold();

  override async createPod(proxy: V1Pod, opts?: CreateOptions): Promise<PodNotice[]> {
    await this.creates.wait();
    return super.createPod(proxy, opts);
  }
}
