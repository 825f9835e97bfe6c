/**
 * A KubeConfig that records every API request made through it, so a test can assert how many
 * requests a reconcile makes (and which). Works on the local API server and on a real cluster.
 */
import { KubeConfig, type RequestContext } from '@kubernetes/client-node';

export class CountingKubeConfig extends KubeConfig {
  /** `METHOD path`, or `METHOD path?query` when constructed with `{ query: true }`; oldest first. */
  requests: string[] = [];
  readonly #query: boolean;

  constructor(options: { query?: boolean } = {}) {
    super();
    this.#query = options.query ?? false;
  }

  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    const url = new URL(context.getUrl());
    this.requests.push(`${context.getHttpMethod()} ${url.pathname}${this.#query ? url.search : ''}`);
    return super.applySecurityAuthentication(context);
  }
}
