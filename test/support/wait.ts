/** The tests' condition waits are the local stack's (local/wait.ts): one `waitFor`. */
export { type WaitOptions, waitFor } from '../../local/wait.ts';
