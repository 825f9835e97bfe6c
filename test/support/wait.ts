/** The tests' condition waits are the kit's (functions/kit/wait.ts, exported by the kit's testing module): one `waitFor`. */
export { type WaitOptions, waitFor } from '../../functions/kit/wait.ts';
