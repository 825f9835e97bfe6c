/**
 * Preloaded (`node --import`) into every child of `startService` (local/service.ts): reports the
 * child's listen on its service port to the parent. See local/listen-report.ts.
 */
import { LISTEN_REPORT_PORT_ENV, reportListen } from './listen-report.ts';

const port = Number(process.env[LISTEN_REPORT_PORT_ENV]);
if (Number.isInteger(port) && port > 0) reportListen(port);
